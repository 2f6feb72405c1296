import os, subprocess, sys, time
def one(tree, engine, query, stream):
    env = {**os.environ, "TEFQ_SERVER": "0", "PYTHONPATH": tree}
    t0 = time.time(); summary = None
    p = subprocess.Popen([sys.executable, "-m", "tefq", "run", query, "--stream", stream, "--engine", engine, "--out", f"/tmp/s15/fz-{engine}.csv"],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd="/tmp")
    for line in p.stderr:
        if line.startswith("tefq:"):
            summary = time.time()
    p.wait(); end = time.time()
    return end - t0, end - summary
trees = {"before": "/work/wt/before", "freeze": "/work/main"}
for i in range(int(sys.argv[1])):
    for name, tree in trees.items():
        for engine in sys.argv[2].split(","):
            for q, s in [("/work/main/usecases/uc1.tef", "/tmp/b42/default/log"), ("/work/main/examples/spec10/uc1.tef", "/work/main/examples/spec10/events.tsv")]:
                w, x = one(tree, engine, q, s)
                print(f"{i} {name:7} {engine:6} {os.path.basename(os.path.dirname(q)):9} whole {w:6.2f} exit {x:5.2f}", flush=True)
