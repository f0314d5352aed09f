"""The scripted expert served as a policy (a stand-in for a learned visuomotor policy).

`harness_expert.expert.ScriptedExpert` is the policy (`infer`, `reset`, `close`, `metadata`);
the modules behind it: `instruction` (the instruction parser), `locating` (pixel perception on
the observation's images), `actuation` (skill calls -> rows of joint targets), `handoff` (the
script's thread and the infer calls taking turns) and `scripts` (one script per task kind).
"""
