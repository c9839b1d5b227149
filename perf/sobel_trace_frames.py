#!/usr/bin/env python3
# Per-frame timing of the imperative Sobel from its trace (`hetflow run sobel --policy async
# --repeat 1 --trace t.json`): medians over the frames past the first and last 10 of how long each
# generation and sum took, how long after its D2H a frame's sum started, what held each generation
# back, and how busy the copy lanes were. Frame i's H2D and D2H are the i-th after the warm-up's.
# A flow-graph run (`--flow-graph`) works too: its `load` and `consume` nodes' i-th runs are frame i's
# (it has no pacing token, so its 'gen start - sum(i-s-1) end' says only how far ahead it ran).
#   python3 perf/sobel_trace_frames.py t.json [more.json ...]
import json, sys, re, statistics as st
def load(p):
    d=json.load(open(p)); ev=d['traceEvents'] if isinstance(d,dict) else d
    return [e for e in ev if e['ph']=='X']
def med(v): return st.median(v) if v else float('nan')
for p in sys.argv[1:]:
    xs=load(p)
    gen={}; con={}
    for e in xs:
        m=re.match(r'(generate|consume) frame (\d+)$', e['name'])
        if m: (gen if m.group(1)=='generate' else con)[int(m.group(2))]=e
    if not gen:  # the flow graph (--flow-graph): its host nodes take frames one at a time, in order
        for name, into in (('load', gen), ('consume', con)):
            for k, e in enumerate(sorted((e for e in xs if e['name'] == name), key=lambda e: e['ts'])): into[k]=e
    h2d=sorted([e for e in xs if e['cat']=='H2D'], key=lambda e:e['ts'])
    d2h=sorted([e for e in xs if e['cat']=='D2H'], key=lambda e:e['ts'])
    nf=len(gen); slots=len(set(e['name'] for e in h2d))  # one input image per slot
    h2d=h2d[len(h2d)-nf:]; d2h=d2h[len(d2h)-nf:]
    t0=gen[0]['ts']; t1=max(con[nf-1]['ts']+con[nf-1]['dur'], 0)
    rng=range(10, nf-10)
    end=lambda e:e['ts']+e['dur']
    r={}
    r['frame period ms']=(t1-t0)/nf/1000
    r['gen dur']=med([gen[i]['dur'] for i in rng])/1000
    r['sum dur']=med([con[i]['dur'] for i in rng])/1000
    r['D2H end->sum start']=med([con[i]['ts']-end(d2h[i]) for i in rng])/1000
    r['gen end->H2D enq']=med([h2d[i]['args']['enqueue_ns']/1000 - end(gen[i]) for i in rng])/1000
    r['H2D enq->start']=med([h2d[i]['ts']-h2d[i]['args']['enqueue_ns']/1000 for i in rng])/1000
    r['H2D dur']=med([h2d[i]['dur'] for i in rng])/1000
    r['D2H dur']=med([d2h[i]['dur'] for i in rng])/1000
    r['D2H enq->start']=med([d2h[i]['ts']-d2h[i]['args']['enqueue_ns']/1000 for i in rng])/1000
    r['gen start - prev gen end']=med([gen[i]['ts']-end(gen[i-1]) for i in rng])/1000
    r['gen start - sum(i-s-1) end']=med([gen[i]['ts']-end(con[i-slots-1]) for i in rng])/1000
    r['gen start - H2D(i-s) end']=med([gen[i]['ts']-end(h2d[i-slots]) for i in rng])/1000
    r['D2H start - sum(i-s) end']=med([d2h[i]['ts']-end(con[i-slots]) for i in rng])/1000
    span=end(d2h[nf-11])-h2d[10]['ts']
    r['H2D busy']=sum(h2d[i]['dur'] for i in rng)/span
    r['D2H busy']=sum(d2h[i]['dur'] for i in rng)/span
    print(p, 'frames',nf,'slots',slots)
    for k,v in r.items(): print('  %-28s %8.3f'%(k,v))
