# The fairness study.


def fairness_targets():
    """Final products of the fairness study for the active config."""
    return []
