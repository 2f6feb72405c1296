import os, signal, subprocess, sys, tempfile, time, random
rng = random.Random(int(sys.argv[2]))
codes = {}
for i in range(int(sys.argv[1])):
    scratch = tempfile.mkdtemp(prefix="sigt-", dir="/tmp/s16")
    env = {**os.environ, "TEFQ_SERVER": "0", "PYTHONFAULTHANDLER": "1", "TMPDIR": scratch}
    d = rng.uniform(0.05, float(sys.argv[4]))
    p = subprocess.Popen([sys.executable, "-m", "tefq", "run", "examples/spec10/uc1.tef", "--stream", "examples/spec10/events.tsv", "--engine", sys.argv[3]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    time.sleep(d)
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGABRT); _, err = p.communicate(timeout=30)
        print(i, d, "HANG", err[-12000:]); break
    time.sleep(0.5)
    left = os.listdir(scratch)
    codes[p.returncode] = codes.get(p.returncode, 0) + 1
    if left or p.returncode != 143 or "Traceback" in err:
        print(i, f"{d:.2f}", p.returncode, left, err[-800:])
print(codes)
