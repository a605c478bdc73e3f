import argparse, torch, torchvision
from torchvision.models import resnet18
from tsls import eps_schedule, tsls_loss
p = argparse.ArgumentParser(); p.add_argument("--loss", default="tsls"); p.add_argument("--seed", type=int, default=0)
a = p.parse_args(); torch.manual_seed(a.seed)
model = resnet18(num_classes=10)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
data = torchvision.datasets.CIFAR10("data", train=True, download=True, transform=torchvision.transforms.ToTensor())
loader = torch.utils.data.DataLoader(data, batch_size=128, shuffle=True)
for epoch in range(30):
    eps = {"ce": 0.0, "ls": 0.1, "tsls": eps_schedule(epoch, 30)}[a.loss]
    for x, y in loader:
        opt.zero_grad(); tsls_loss(model(x), y, eps).backward(); opt.step()
    print(f"epoch {epoch} test_acc=?")
