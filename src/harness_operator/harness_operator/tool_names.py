"""The names of the MCP server's tools, in the order its help lists them: what
`mcp_server.build_server` registers (its test checks), for the command's help to name without
importing the MCP SDK."""

TOOLS = (
    'observe',
    'do_action',
    'run_batch',
    'recheck',
    'undo',
    'prefer',
    'refill_pause',
    'estop',
    'journal',
    'tickets',
    'budgets',
    'finish',
)
POLICY_TOOLS = ('list_policies', 'run_policy')  # with the learned half (--policies)
