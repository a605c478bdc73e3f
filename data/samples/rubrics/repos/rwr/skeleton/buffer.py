import random

class ReplayBuffer:
    "Uniform replay (reward weighting is TODO)."
    def __init__(self, capacity=100_000): self.capacity, self.data = capacity, []
    def add(self, t): self.data = (self.data + [t])[-self.capacity:]
    def sample(self, n): return random.sample(self.data, n)
