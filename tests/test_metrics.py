import numpy as np
import pytest
from scibench.metrics import system_level, instance_level, instance_level_detail, pooled, correlation, mean_ci, corr_ci


def test_system_level_known_answers():
    # system means of H: [2, 3, 4]; of M: [4, 3, 2] → perfectly reversed
    H = [[1, 2, 3], [3, 4, 5]]
    M = [[5, 3, 1], [3, 3, 3]]
    assert system_level(H, M, "pearson") == pytest.approx(-1.0)
    assert system_level(H, M, "spearman") == pytest.approx(-1.0)
    assert system_level(H, M, "kendall") == pytest.approx(-1.0)


def test_instance_level_is_mean_of_row_correlations_and_skips_constant_rows():
    H = [[1, 2, 3], [1, 2, 3], [2, 2, 2]]
    M = [[1, 2, 3], [3, 2, 1], [1, 2, 3]]
    # row 1: +1, row 2: -1, row 3: H constant → skipped
    v, used, skipped = instance_level_detail(H, M, "pearson")
    assert (v, used, skipped) == (pytest.approx(0.0), 2, 1)
    assert instance_level(H, M, "kendall") == pytest.approx(0.0)


def test_instance_differs_from_pooled():
    # within each example the metric agrees perfectly, but examples sit at different offsets
    H = np.array([[1, 2, 3], [1, 2, 3]])
    M = np.array([[1, 2, 3], [10, 11, 12]])
    assert instance_level(H, M, "pearson") == pytest.approx(1.0)
    # pooled over 6 pairs: x=[1,2,3,1,2,3], y=[1,2,3,10,11,12]
    x, y = H.ravel(), M.ravel()
    assert pooled(H, M, "pearson") == pytest.approx(np.corrcoef(x, y)[0, 1])
    assert pooled(H, M, "pearson") < 0.2


def test_kendall_hand_computed():
    # x = 1..4, y = [1, 3, 2, 4]: 5 concordant, 1 discordant pair → tau = 4/6
    assert correlation([1, 2, 3, 4], [1, 3, 2, 4], "kendall") == pytest.approx(4 / 6)


def test_missing_scores_are_nan_not_zero():
    H = [[1, 2, 3], [1, 2, 3]]
    M = [[1, 2, 3], [np.nan, 2, 3]]
    v, used, skipped = instance_level_detail(H, M, "pearson")
    assert (used, skipped) == (1, 1)
    assert pooled(H, M) == pytest.approx(1.0)


def test_bad_corr_and_shape():
    with pytest.raises(ValueError):
        system_level([[1, 2]], [[1, 2]], "cosine")
    with pytest.raises(ValueError):
        system_level([[1, 2]], [[1, 2, 3]], "pearson")


def test_mean_ci_counts_and_covers():
    m, lo, hi, n = mean_ci([1, 2, 3, None, float("nan"), 4])
    assert (m, n) == (2.5, 4) and lo < m < hi
    r = corr_ci(np.arange(30).reshape(10, 3), np.arange(30).reshape(10, 3) ** 1.5, "system", "spearman", n_resamples=200)
    assert r["value"] == pytest.approx(1.0) and r["n"] == 10
