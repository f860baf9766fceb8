"""thinkbias: plots."""
