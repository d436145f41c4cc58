"""Adapters onto verifiers: `legacy` (load_environment, verifiers 0.2.0 / 0.3.1) and `v1`
(Taskset + harness, verifiers 0.3.1 / 0.4.0); onto TRL: `trl` (an `environment_factory` for TRL's
GRPOTrainer; imports no TRL). Shared by them: `arguments` (the environment's arguments),
`endpoint` (the sub-call endpoint and chat function) and `fields` (arguments as pydantic fields).
The OpenEnv environment is its own package, `fathom_rlm.openenv`.

Nothing is imported here, so each adapter loads only on the verifiers API it needs.
"""
