"""thinkbias: fairness."""
