"""thinkbias: data."""
