import numpy as np

def ece(conf, correct, n_bins=15):
    "Expected calibration error with equal-width confidence bins."
    bins = np.linspace(0, 1, n_bins + 1); e = 0.0
    for lo, hi in zip(bins[:-1], bins[1:]):
        m = (conf > lo) & (conf <= hi)
        if m.any(): e += m.mean() * abs(conf[m].mean() - correct[m].mean())
    return e
