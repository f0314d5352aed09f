"""Learned policies: `training` (LeRobot's own training on a harness dataset, in the learning
extra's environment), `learned_policy` (a trained checkpoint behind the policy protocol, with
the harness's pixel perception as its front end) and `serve` (its openpi server)."""
