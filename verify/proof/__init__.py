"""The all-values proof (docs/proofs.md): closed-form counts (`counts`), terms and
witness candidates (`terms`), the obligations (`obligations`) and the driver
(`prove`). Trusted: imports only semantics, verify.verdicts and verify.engines."""
