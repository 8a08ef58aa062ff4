#!/usr/bin/env python3
"""Instructions per message, by thread and by step, from two callgrind runs.

Two runs of the same volley-bench command that differ only in size (e.g.
`--messages 100000` and `--messages 300000`) are profiled with

    valgrind --tool=callgrind --trace-children=yes --separate-threads=yes \
        --collect-systime=nsec --callgrind-out-file=DIR/callgrind.out.%p \
        volley-bench ...

and this script prints (large - small) / MESSAGES, where MESSAGES is the
difference in messages between the two runs: start-up, connection set-up
and anything else that does not grow with the message count cancels out.
Costs are self costs (inlined code counts in the function it was inlined
into). The first process is the one started (node A, the sender); a
child (`remote-server`, with `--two-processes`) is node B.

    bench/callgrind_steps.py SMALL_DIR LARGE_DIR MESSAGES [--functions N]

Steps are assigned by the first pattern of STEPS that matches the function
name; what matches none is "other" (listed with --functions).
"""

import argparse
import collections
import os
import re
import sys

# (step, pattern on the demangled function name), first match wins. The
# steps are those of docs/benchmarks-remote.md's cost table.
STEPS = [
    ("write: dispatcher flush, try_write, writer task",
     r"(outbound::writer|try_write|BatchEnd|batch_end|__libc_write|__GI___writev|^write$|^writev$|"
     r"__send|sendto)"),
    ("read: read_buf, the socket, I/O driver",
     r"(poll_read|read_buf(?!fer)|__libc_read|^read$|recvfrom|__recv|mio::|io::driver|Registration|"
     r"IdleWatch|epoll)"),
    ("sender: ActorRef tell, RemoteRef enqueue", r"(ActorRef<M>>?::(try_tell|tell|send_envelope)|"
     r"RemoteRef as volley::actor::actor_ref::RefTarget|route_send)"),
    ("route: type, association", r"RouteHint"),
    ("ref codec scopes (scoped_tls, with what is inlined in them)", r"scoped_tls|encode_in_scope|"
     r"decode_in_scope|with_decode_limits|ExportTable|ImportTable::scope"),
    ("lane buffer: lock, recipient id, declarations, frame header",
     r"(outbound::lane|wire::encode|(?<!Serde)Encoder|declarations)"),
    ("encode payload: serializer and its panic guard",
     r"(registry::encode|ser::Serialize|SerdeEncoder|bincode::enc|Serialize for|serialize_field|"
     r"direct::encode_with|DirectCodec>::encode|DirectWriter|Serializer<T>>::encode)"),
    ("frame decode and run building (reader pass)", r"(Reader<C>::read_buffer|inbound::frames|"
     r"inbound::sorting|Run::flush|Run::push|wire::decode)"),
    ("ref and type lookup, run to mailbox", r"(deliver_run|TypeCache|ImportTable|IdSlots|"
     r"registry::deliver|Reader<C>::deliver)"),
    ("decode payload: deserializer and its panic guard",
     r"(decode_guarded|decode_run|decode_payload|bincode|Deserialize|deserialize|de_borrowed|"
     r"direct::decode_with|DirectCodec>::decode|DirectReader|Serializer<T>>::decode)"),
    ("mailbox push and take", r"(VecDeque|enqueue_all|Mailbox|mailbox|tell_all)"),
    ("activation: ActorCell::call and the actor's handle",
     r"(ActorCell<A>>::call|as volley::actor::definition::Actor>::handle|Client::ping)"),
    ("scheduling: dispatcher loop, submit, wake, park",
     r"(Runnable for volley::actor::cell|dispatcher|Dispatcher|Parking|parking|crossbeam|"
     r"tokio::runtime|tokio::sync|futex|__lll_|pthread_cond|syscall)"),
    ("malloc, free, memcpy", r"^(malloc|free|_int_malloc|_int_free|realloc|cfree|__memcpy|__memmove|"
     r"__memset|memcpy|memmove)"),
]
COMPILED = [(name, re.compile(p)) for name, p in STEPS]


def parse(path):
    """Self cost per (function, source file of the code), the event names
    and the command. The file is the inlined code's (`fi=`/`fe=`), so a
    function that inlined others is split by where the code came from."""
    events, cmd = None, ""
    names, files = {}, {}
    cost = collections.Counter()
    fn = None
    fl = cur = ""
    skip_next = False
    with open(path, errors="replace") as f:
        for line in f:
            if not line:
                continue
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:
                    skip_next = False
                    continue
                if fn is None:
                    continue
                parts = line.split()
                for i, v in enumerate(parts[1:]):
                    cost[(fn + " @ " + cur, i)] += int(v)
                continue
            if line.startswith("fn="):
                fn = resolve(names, line[3:].strip())
                cur = fl
            elif line.startswith("fl="):
                fl = cur = resolve(files, line[3:].strip())
            elif line.startswith(("fi=", "fe=")):
                cur = resolve(files, line[3:].strip())
            elif line.startswith("calls="):
                skip_next = True
            elif line.startswith(("cfn=", "cfi=", "cfl=")):
                if line.startswith("cfn="):
                    resolve(names, line[4:].strip())
                else:
                    resolve(files, line[4:].strip())
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("cmd:"):
                cmd = line[4:].strip()
    return events, cmd, cost


def resolve(names, spec):
    """Name compression: `(id) name` defines, `(id)` refers."""
    m = re.match(r"\((\d+)\)(?:\s+(.*))?$", spec)
    if not m:
        return spec
    if m.group(2) is not None:
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1), spec)


def load(directory):
    """{(process index, thread number): (events, cost)} of one run."""
    runs = {}
    pids = {}
    for name in sorted(os.listdir(directory)):
        m = re.match(r"callgrind\.out\.(\d+)(?:-(\d+))?$", name)
        if not m:
            continue
        events, cmd, cost = parse(os.path.join(directory, name))
        if events is None:
            continue  # the empty file of a process profiled per thread
        pid, thread = int(m.group(1)), int(m.group(2) or 1)
        pids.setdefault(pid, "B" if "remote-server" in cmd else "A")
        runs[(pid, thread)] = (events, cost)
    return {(pids[p], t): v for (p, t), v in runs.items()}, sorted(set(pids.values()))


def step_of(function):
    for name, pattern in COMPILED:
        if pattern.search(function):
            return name
    return "other"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("small")
    ap.add_argument("large")
    ap.add_argument("messages", type=float, help="messages (or round trips) between the runs")
    ap.add_argument("--functions", type=int, default=25, help="functions listed per process")
    args = ap.parse_args()
    small, _ = load(args.small)
    large, processes = load(args.large)
    per = args.messages
    events = next(iter(large.values()))[0]
    ir = events.index("Ir")
    sysc = events.index("sysCount") if "sysCount" in events else None
    for proc in processes:
        print(f"== node {proc} ==")
        threads = sorted(t for (p, t) in large if p == proc)
        by_step = collections.Counter()
        by_fn = collections.Counter()
        calls = 0.0
        for t in threads:
            lc = large[(proc, t)][1]
            sc = small.get((proc, t), (None, collections.Counter()))[1]
            total = (sum(v for (f, i), v in lc.items() if i == ir)
                     - sum(v for (f, i), v in sc.items() if i == ir)) / per
            if sysc is not None:
                calls += (sum(v for (f, i), v in lc.items() if i == sysc)
                          - sum(v for (f, i), v in sc.items() if i == sysc)) / per
            if abs(total) >= 1:
                print(f"  thread {t}: {total:8.1f} instructions per message")
            for (f, i), v in lc.items():
                if i == ir:
                    by_fn[f] += v
            for (f, i), v in sc.items():
                if i == ir:
                    by_fn[f] -= v
        for f, v in by_fn.items():
            by_step[step_of(f)] += v
        total = sum(by_step.values()) / per
        print(f"  all threads: {total:8.1f} instructions per message"
              + (f", {calls:.4f} syscalls per message" if sysc is not None else ""))
        for step, v in by_step.most_common():
            print(f"    {v / per:8.1f}  {step}")
        print(f"  top functions (self, per message):")
        merged = collections.Counter()
        for f, v in by_fn.items():
            merged[f.split(" @ ")[0]] += v
        for f, v in merged.most_common(args.functions):
            print(f"    {v / per:8.1f}  [{step_of(f)[:12]}] {f[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
