#!/usr/bin/env python3
"""Trace variants for the placement replay (BENCHMARKS.md, "The project's policy").

Writes openb_pod_list_<variant>.csv files derived from the v2023 trace's default pod list, for the
kinds of workload that the six public traces (default, gpushare20..100) do not cover, with fixed
seeds:

  synthgpuspec10/33    NN % of the GPU pods accept one model (70 %) or two (30 %), drawn in
                       proportion to the cluster's GPUs per model
  synthmultigpu30/50   NN % of the whole one-GPU pods become 2-, 4- or 8-GPU pods (21/20/59 %),
                       CPU x GPUs capped at 96 cores
  synthcpu250          the CPU-only pods plus half as many again (copies)
  pmultigpu20/30/40    with --multigpu50: the default list plus the first pods that the public
                       multigpu50 list appends to it, until multi-GPU pods ask for NN % of the
                       GPU demand (the public list appends 909 such pods: 50 %)
  pgpuspec10/20/25/33  with --gpuspec33-head: the public gpuspec33 list's models where its head
                       (the first rows, as fetched) gives them (pgpuspec33 only); elsewhere NN %
                       of the GPU pods draw a gpu_spec from the head's own mix (fractional and
                       whole pods apart)

usage: make_variants.py --trace-dir DIR --out OUT [--multigpu50 FILE] [--gpuspec33-head FILE]
"""
import argparse, collections, csv, os, random, shutil

p = argparse.ArgumentParser()
p.add_argument('--trace-dir', required=True, help='folder with openb_pod_list_default.csv and the node list')
p.add_argument('--out', required=True)
p.add_argument('--multigpu50', help='the public openb_pod_list_multigpu50.csv')
p.add_argument('--gpuspec33-head', help='the first rows of the public openb_pod_list_gpuspec33.csv')
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
shutil.copy(os.path.join(a.trace_dir, 'openb_node_list_gpu_node.csv'), a.out)
nodes = list(csv.DictReader(open(os.path.join(a.trace_dir, 'openb_node_list_gpu_node.csv'))))
default = list(csv.DictReader(open(os.path.join(a.trace_dir, 'openb_pod_list_default.csv'))))
fields = list(default[0].keys())


def write(name, rows, names=fields):
    with open(os.path.join(a.out, f'openb_pod_list_{name}.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=names, lineterminator='\n', extrasaction='ignore')
        w.writeheader()
        w.writerows(rows)


capacity = collections.Counter()
for n in nodes:
    capacity[n['model']] += int(n['gpu'])
models, weights = list(capacity), [capacity[m] for m in capacity]
for pct in (10, 33):
    r, out = random.Random(pct), []
    for row in default:
        row = dict(row)
        if int(row['num_gpu']) > 0 and r.random() < pct / 100:
            k = 1 if r.random() < 0.7 else 2
            row['gpu_spec'] = '|'.join(sorted(set(r.choices(models, weights, k=k))))
        out.append(row)
    write(f'synthgpuspec{pct}', out)
for pct in (30, 50):
    r, out = random.Random(100 + pct), []
    for row in default:
        row = dict(row)
        if row['num_gpu'] == '1' and row['gpu_milli'] == '1000' and r.random() < pct / 100:
            k = r.choices([2, 4, 8], [0.21, 0.2, 0.59])[0]
            row['num_gpu'] = str(k)
            row['cpu_milli'] = str(min(int(row['cpu_milli']) * k, 96000))
        out.append(row)
    write(f'synthmultigpu{pct}', out)
r, out = random.Random(7), [dict(x) for x in default]
cpu_only = [x for x in default if x['num_gpu'] == '0']
for j in range(int(len(cpu_only) * 1.5)):
    x = dict(r.choice(cpu_only))
    x['name'] = f'synth-cpu-{j:05d}'
    out.append(x)
write('synthcpu250', out)

if a.multigpu50:
    public = list(csv.DictReader(open(a.multigpu50)))
    known = {row['name'] for row in default}
    appended = [row for row in public if row['name'] not in known]
    single = sum(int(x['gpu_milli']) / 1000 for x in default if x['num_gpu'] == '1')
    for pct in (20, 30, 40):
        n, multi = 0, sum(int(x['num_gpu']) for x in default if int(x['num_gpu']) > 1)
        while multi / (single + multi) < pct / 100:
            multi += int(appended[n]['num_gpu'])
            n += 1
        write(f'pmultigpu{pct}', default + appended[:n], names=list(public[0].keys()))

if a.gpuspec33_head:
    head = [x for x in csv.DictReader(open(a.gpuspec33_head)) if x.get('scheduled_time') is not None]
    mix = collections.defaultdict(list)
    for x in head:
        if int(x['num_gpu']) > 0 and x['gpu_spec']:
            mix[x['num_gpu'] == '1' and x['gpu_milli'] != '1000'].append(x['gpu_spec'])
    every = [s for v in mix.values() for s in v]
    for pct in (10, 20, 25, 33):
        r, out = random.Random(pct), []
        for i, row in enumerate(default):
            row = dict(row)
            if int(row['num_gpu']) > 0:
                if pct == 33 and i < len(head):
                    row['gpu_spec'] = head[i]['gpu_spec']
                elif r.random() < pct / 100:
                    share = row['num_gpu'] == '1' and row['gpu_milli'] != '1000'
                    row['gpu_spec'] = r.choice(mix[share] or every)
            out.append(row)
        write(f'pgpuspec{pct}', out)
