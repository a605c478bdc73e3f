import argparse, json, torch, torchvision
from torchvision.models import resnet18
from loss import tsls_eps, smoothed_ce

p = argparse.ArgumentParser()
p.add_argument("--loss", choices=["ce", "ls", "tsls"], default="tsls")
p.add_argument("--seed", type=int, default=0)
p.add_argument("--epochs", type=int, default=30)
a = p.parse_args()
torch.manual_seed(a.seed)
model = resnet18(num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, a.epochs)
train = torch.utils.data.DataLoader(torchvision.datasets.CIFAR10("data", train=True, download=True,
        transform=torchvision.transforms.Compose([torchvision.transforms.RandomCrop(32, 4),
        torchvision.transforms.RandomHorizontalFlip(), torchvision.transforms.ToTensor()])), batch_size=128, shuffle=True)
for epoch in range(a.epochs):
    eps = {"ce": 0.0, "ls": 0.1, "tsls": tsls_eps(epoch, a.epochs)}[a.loss]
    for x, y in train:
        opt.zero_grad(); smoothed_ce(model(x), y, eps).backward(); opt.step()
    sched.step()
