import glob, numpy as np, matplotlib.pyplot as plt
for m in ("rwr", "uniform", "per"):
    runs = np.stack([np.load(f)[:, 1] for f in sorted(glob.glob(f"results/{m}_*.npy"))])   # 3 seeds
    x = np.arange(runs.shape[1]) * 10_000
    plt.plot(x, runs.mean(0), label=m); plt.fill_between(x, runs.mean(0) - runs.std(0), runs.mean(0) + runs.std(0), alpha=.2)
plt.xlabel("environment steps"); plt.ylabel("success rate"); plt.legend(); plt.savefig("success.png")
