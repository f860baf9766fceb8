"""thinkbias: stats."""
