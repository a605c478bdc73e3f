import numpy as np

class RewardWeightedReplay:
    "Replay buffer whose transitions carry their episode return; sampled with p_i proportional to exp(beta * R_i)."
    def __init__(self, capacity=100_000, beta=2.0):
        self.capacity, self.beta, self.data, self.returns = capacity, beta, [], []
    def add_episode(self, transitions):
        ret = sum(t[2] for t in transitions)          # episode return stored with each transition
        for t in transitions:
            self.data.append(t); self.returns.append(ret)
        self.data, self.returns = self.data[-self.capacity:], self.returns[-self.capacity:]
    def sample(self, n):
        r = np.asarray(self.returns)
        p = np.exp(self.beta * (r - r.max())); p /= p.sum()
        idx = np.random.choice(len(self.data), n, p=p)
        return [self.data[i] for i in idx]
