"""Adapters onto verifiers: `legacy` (load_environment, verifiers 0.2.0 / 0.3.1) and `v1`
(Taskset + harness, verifiers 0.3.1 / 0.4.0); onto TRL: `trl` (an `environment_factory` for TRL's
GRPOTrainer; imports no TRL).

Nothing is imported here, so each adapter loads only on the verifiers API it needs.
"""
