"""Every figure draws from small tables and from empty ones."""

import pandas as pd

from thinkbias.plots import position as plots


def test_figures(tmp_path):
    q = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "m",
            "mode": ["cot"] * 4 + ["direct"] * 4,
            "bin": [1, 2, 3, 4] * 2,
            "n": 2,
            "mean_length": [10, 20, 40, 80] * 2,
            "pbs": [0.1, 0.2, 0.3, 0.4] * 2,
            "pbs_se": 0.01,
        }
    )
    t1 = pd.DataFrame(
        {"benchmark": ["mmlu"], "model": ["m"], "mode": ["cot"], "partial_rho": [0.3], "p_value": [0.01], "n": [8]}
    )
    b = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "m",
            "mode": "cot",
            "bucket": ["0-0.3", "0.3-0.5"],
            "n": 3,
            "n_answered": 3,
            "change_rate": [0.3, 0.6],
            "n_changed": [1, 2],
            "toward_preferred_rate": [0.0, 0.5],
            "preferred_position": "A",
        }
    )
    s = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "m",
            "mode": ["direct", "cot", "reasoning"],
            "length": [5, 500, 2000],
            "pbs": [0.4, 0.2, 0.3],
        }
    )
    plots.figure1_quartiles(q, tmp_path / "1.png")
    plots.figure2_panels(q, t1, tmp_path / "2.png")
    plots.figure3_truncation(b, tmp_path / "3.png")
    plots.figure4_regimes(s, tmp_path / "4.png")
    plots.figure3_truncation(b.iloc[0:0], tmp_path / "3e.png")
    plots.figure1_quartiles(q[q["mode"] == "direct"], tmp_path / "1e.png")
    plots.figure2_panels(q[q["mode"] == "direct"], t1, tmp_path / "2e.png")
    for name in ("1", "2", "3", "4", "3e", "1e", "2e"):
        assert (tmp_path / f"{name}.png").stat().st_size > 1000


def test_figure2_label_shows_an_underflowed_p_from_its_log10(tmp_path):
    import matplotlib.pyplot as plt

    q = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "m",
            "mode": "reasoning",
            "bin": [1, 2, 3, 4],
            "n": 250,
            "mean_length": [10, 20, 40, 80],
            "pbs": [0.1, 0.2, 0.3, 0.4],
            "pbs_se": 0.01,
        }
    )
    # r = 0.92 over 1,000 questions: p = 10^-407.1 is 0.0 in a double
    t1 = pd.DataFrame(
        {
            "benchmark": ["mmlu"],
            "model": ["m"],
            "mode": ["reasoning"],
            "partial_rho": [0.92],
            "p_value": [0.0],
            "log10_p_value": [-407.14536],
            "n": [1000],
        }
    )
    with plt.rc_context({"svg.fonttype": "none"}):  # keep text as text in the SVG
        plots.figure2_panels(q, t1, tmp_path / "2.svg")
    svg = (tmp_path / "2.svg").read_text()
    assert "(p = 7.2e-408, N = 1000)" in svg and "p = 0," not in svg
