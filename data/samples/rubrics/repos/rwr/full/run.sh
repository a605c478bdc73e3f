for r in rwr uniform per; do for s in 0 1 2; do python train.py --replay $r --seed $s --steps 200000; done; done
python plot.py
