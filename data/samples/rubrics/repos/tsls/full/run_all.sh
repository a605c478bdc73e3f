#!/bin/bash
# all three losses, three seeds each; results/<loss>_<seed>.json hold test accuracy and ECE
for loss in ce ls tsls; do for seed in 0 1 2; do
  python train.py --loss $loss --seed $seed --epochs 30 && python evaluate.py --loss $loss --seed $seed
done; done
python summarize.py
