"""fathom-rlm's lab: what develops and audits the environment, never shipped with it.

* `ladder`: the honest scripted reference and its weaker rungs (they never see the gold);
* `audit`: cheap solvers and attacks a fair environment must defeat, and instruments that
  audit the generator from outside;
* `policies`: every scripted policy with its role, as the policy server serves them;
* `evaluate` (with `eval_runner`, `eval_report`, `user_rows`): the evaluation command and report;
* `soak`: the long fault-injected runs; `sft_export`: reference conversations for a warm start.
"""
