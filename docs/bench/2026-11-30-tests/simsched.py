"""Model of pytest-xdist 3.8's loadfile scheduling (2 workers) from one run's per-test times (junit)."""
import sys, xml.etree.ElementTree as ET, collections
sys.path.insert(0, '.')
from tests.support.suite_order import LONGEST_FIRST
t = ET.parse(sys.argv[1])
units = collections.OrderedDict()
for tc in t.iter('testcase'):
    f = tc.get('classname').replace('.', '/') + '.py'
    units.setdefault(f, []).append(float(tc.get('time')))
collected = list(units)  # junit order is completion order, not collection: use collection order from pytest
order_file = sys.argv[2]
coll = [l.strip().split('::')[0] for l in open(order_file) if '::' in l]
coll_units = list(dict.fromkeys(coll))
def makespan(unit_order):
    queue = [(u, units.get(u, [])) for u in unit_order]
    nodes = [{'pending': [], 't': 0.0} for _ in range(2)]
    def assign(n):
        if queue:
            u, tests = queue.pop(0); n['pending'] += list(tests)
    for n in nodes: assign(n)
    for n in nodes:
        if len(n['pending']) <= 2: assign(n)
    while any(n['pending'] for n in nodes):
        n = min((n for n in nodes if n['pending']), key=lambda n: n['t'] + n['pending'][0])
        n['t'] += n['pending'].pop(0)
        if len(n['pending']) <= 2: assign(n)
        for m in nodes:
            if not m['pending']: assign(m)
    return [round(n['t'] / 60, 2) for n in nodes]
default = sorted(coll_units, key=lambda u: -len([c for c in coll if c == u]))  # loadscope reorder: by test count
rank = {p: i for i, p in enumerate(LONGEST_FIRST)}
ours = sorted(coll_units, key=lambda u: rank.get(u, len(rank)))
print("by test count (xdist default):", makespan(default))
print("longest first:", makespan(ours))
print("collection order:", makespan(coll_units))
