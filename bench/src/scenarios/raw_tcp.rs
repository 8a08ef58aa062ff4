//! `raw-tcp`: the physical baseline for the remote scenarios, with nothing
//! but tokio on loopback. (1) A writer sends N pre-encoded frames the size
//! of volley's ping frame (the real frame, from volley's encoder) in large
//! batches; a reader splits them by their length headers and counts them:
//! frames/s one way. (2) A request/response ping-pong of one such frame over
//! one connection with TCP_NODELAY: round-trip p50/p99/p99.9. Writer,
//! reader, client and server each run on their own current-thread runtime
//! (one thread each, like one I/O thread per node).

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::remote_common::{histogram, load, ping_frame};
use super::{Ctx, Scenario};
use crate::measure::{Calibration, Throughput, Workload};
use crate::progress::Progress;
use crate::report::remote_rows::{RawTcpRow, RoundTripRow, StreamRow};
use crate::report::{Report, Row};

pub const SCENARIO: Scenario = Scenario {
    name: "raw-tcp",
    about: "bare tokio TCP on loopback: frames/s one way and ping-pong round trip",
    run: |ctx| Ok(Box::new(run(ctx)?)),
};

/// Bytes per write in the stream test.
const BATCH_BYTES: usize = 64 * 1024;

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A connected (client, server) pair of std streams, made non-blocking
/// for tokio.
fn connected_pair() -> std::io::Result<(std::net::TcpStream, std::net::TcpStream)> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let client = std::net::TcpStream::connect(listener.local_addr()?)?;
    let (server, _) = listener.accept()?;
    for s in [&client, &server] {
        s.set_nodelay(true)?;
        s.set_nonblocking(true)?;
    }
    Ok((client, server))
}

/// Counts whole frames (4-byte little-endian length, then that many bytes)
/// in a stream; `carry` holds a partial frame between reads.
pub struct FrameCounter {
    carry: Vec<u8>,
    pub frames: u64,
}

impl FrameCounter {
    pub fn new() -> Self {
        FrameCounter {
            carry: Vec::new(),
            frames: 0,
        }
    }

    pub fn feed(&mut self, mut data: &[u8]) {
        if !self.carry.is_empty() {
            self.carry.extend_from_slice(data);
            let carry = std::mem::take(&mut self.carry);
            let used = self.scan(&carry);
            self.carry = carry[used..].to_vec();
            return;
        }
        let used = self.scan(data);
        data = &data[used..];
        self.carry.extend_from_slice(data);
    }

    fn scan(&mut self, buf: &[u8]) -> usize {
        let mut at = 0;
        while buf.len() - at >= 4 {
            let len = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]) as usize;
            if buf.len() - at < 4 + len {
                break;
            }
            at += 4 + len;
            self.frames += 1;
        }
        at
    }
}

impl Default for FrameCounter {
    fn default() -> Self {
        Self::new()
    }
}

/// One way: `n` frames written in 64 KiB batches, counted by the reader.
/// Returns the frames counted and the time from the first write to the last
/// frame read.
pub fn stream_once(frame: &[u8], n: u64) -> crate::Result<Throughput> {
    let (client, server) = connected_pair()?;
    let per_batch = (BATCH_BYTES / frame.len()).max(1) as u64;
    let batch: Vec<u8> = frame.repeat(per_batch as usize);
    let expected_bytes = n * frame.len() as u64;
    let reader = std::thread::spawn(move || -> std::io::Result<(u64, Instant)> {
        let rt = runtime()?;
        rt.block_on(async move {
            let mut s = TcpStream::from_std(server)?;
            let mut buf = vec![0u8; 256 * 1024];
            let mut counter = FrameCounter::new();
            let mut bytes = 0u64;
            while bytes < expected_bytes {
                let got = s.read(&mut buf).await?;
                if got == 0 {
                    break;
                }
                bytes += got as u64;
                counter.feed(&buf[..got]);
            }
            Ok((counter.frames, Instant::now()))
        })
    });
    let frame = frame.to_vec();
    let writer = std::thread::spawn(move || -> std::io::Result<Instant> {
        let rt = runtime()?;
        rt.block_on(async move {
            let mut s = TcpStream::from_std(client)?;
            let start = Instant::now();
            let mut left = n;
            while left >= per_batch {
                s.write_all(&batch).await?;
                left -= per_batch;
            }
            for _ in 0..left {
                s.write_all(&frame).await?;
            }
            s.flush().await?;
            Ok(start)
        })
    });
    let start = writer.join().map_err(|_| "writer panicked")??;
    let (frames, end) = reader.join().map_err(|_| "reader panicked")??;
    if frames != n {
        return Err(format!("raw-tcp: wrote {n} frames, the reader counted {frames}").into());
    }
    Ok(Throughput::new(frames, end.duration_since(start)))
}

/// Request/response over one connection: `warmup` unmeasured then `n`
/// measured round trips of one frame, one in flight. Histogram in ns.
pub fn pingpong_once(frame: &[u8], n: u64, warmup: u64) -> crate::Result<Histogram<u64>> {
    let (client, server) = connected_pair()?;
    let len = frame.len();
    let total = n + warmup;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let rt = runtime()?;
        rt.block_on(async move {
            let mut s = TcpStream::from_std(server)?;
            let mut buf = vec![0u8; len];
            for _ in 0..total {
                s.read_exact(&mut buf).await?;
                s.write_all(&buf).await?;
            }
            Ok(())
        })
    });
    let frame = frame.to_vec();
    let client = std::thread::spawn(move || -> crate::Result<Histogram<u64>> {
        let rt = runtime()?;
        rt.block_on(async move {
            let mut s = TcpStream::from_std(client)?;
            let mut buf = vec![0u8; len];
            let mut h = histogram();
            for i in 0..total {
                let t = Instant::now();
                s.write_all(&frame).await?;
                s.read_exact(&mut buf).await?;
                if i >= warmup {
                    h.record(t.elapsed().as_nanos().max(1) as u64)?;
                }
                if buf != frame {
                    return Err("raw-tcp: the echo changed the frame".into());
                }
            }
            Ok(h)
        })
    });
    let h = client.join().map_err(|_| "client panicked")??;
    echo.join().map_err(|_| "echo panicked")??;
    if h.len() != n {
        return Err(format!("raw-tcp: {n} round trips, {} recorded", h.len()).into());
    }
    Ok(h)
}

/// The same ping-pong with blocking std sockets on two plain threads (the
/// kernel wakes the blocked reader directly; no event loop).
pub fn pingpong_blocking_once(frame: &[u8], n: u64, warmup: u64) -> crate::Result<Histogram<u64>> {
    pingpong_std_once(frame, n, warmup, false)
}

/// The same ping-pong on non-blocking std sockets whose reads spin (two
/// plain threads, each polling its socket in a loop): the physical floor
/// for one message in flight, with no wake-up on either side. volley's
/// dispatcher threads spin while idle too, so this, not the parking rows,
/// is what its one-in-flight latency is compared with.
pub fn pingpong_spinning_once(frame: &[u8], n: u64, warmup: u64) -> crate::Result<Histogram<u64>> {
    pingpong_std_once(frame, n, warmup, true)
}

/// Ping-pong of `frame` on std sockets and two plain threads; `spinning`
/// picks non-blocking sockets polled in a loop over blocking ones.
fn pingpong_std_once(
    frame: &[u8],
    n: u64,
    warmup: u64,
    spinning: bool,
) -> crate::Result<Histogram<u64>> {
    let (client, server) = connected_pair()?;
    client.set_nonblocking(spinning)?;
    server.set_nonblocking(spinning)?;
    let len = frame.len();
    let total = n + warmup;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = server;
        let mut buf = vec![0u8; len];
        for _ in 0..total {
            spin_read_exact(&mut s, &mut buf)?;
            spin_write_all(&mut s, &buf)?;
        }
        Ok(())
    });
    let mut s = client;
    let mut buf = vec![0u8; len];
    let mut h = histogram();
    for i in 0..total {
        let t = Instant::now();
        spin_write_all(&mut s, frame)?;
        spin_read_exact(&mut s, &mut buf)?;
        if i >= warmup {
            h.record(t.elapsed().as_nanos().max(1) as u64)?;
        }
    }
    echo.join().map_err(|_| "echo panicked")??;
    Ok(h)
}

/// `read_exact` that spins while a non-blocking socket has nothing (on a
/// blocking socket, a plain `read_exact`: `read` never says WouldBlock).
fn spin_read_exact(s: &mut std::net::TcpStream, buf: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    let mut at = 0;
    while at < buf.len() {
        match s.read(&mut buf[at..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(read) => at += read,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `write_all` that spins while a non-blocking socket is full (on a
/// blocking socket, a plain `write_all`).
fn spin_write_all(s: &mut std::net::TcpStream, buf: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut at = 0;
    while at < buf.len() {
        match s.write(&buf[at..]) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(written) => at += written,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The open-loop counterpart of [`pingpong_blocking_once`], for the
/// remote-latency comparison at a fixed offered rate: a pacer thread writes
/// frame `i` at `start + i / rate` (sequence number in the frame's last 8
/// bytes), a blocking echo thread answers, and a reader thread records each
/// answer's latency from its *scheduled* time, as volley's open loop does.
/// Sends `n` frames. Returns (latency histogram, the pacer's lateness
/// histogram).
pub fn open_loop_blocking(
    frame: &[u8],
    rate: u64,
    n: u64,
) -> crate::Result<(Histogram<u64>, Histogram<u64>)> {
    use std::io::{Read, Write};
    let period = Duration::from_nanos(1_000_000_000 / rate);
    let len = frame.len();
    if len < 8 {
        return Err("the frame is too short to carry a sequence number".into());
    }
    let (client, server) = connected_pair()?;
    client.set_nonblocking(false)?;
    server.set_nonblocking(false)?;
    let echo = std::thread::spawn(move || -> std::io::Result<()> {
        let mut s = server;
        let mut buf = vec![0u8; len];
        for _ in 0..n {
            s.read_exact(&mut buf)?;
            s.write_all(&buf)?;
        }
        Ok(())
    });
    let start = Instant::now() + Duration::from_millis(2);
    let mut reader_stream = client.try_clone()?;
    let reader = std::thread::spawn(move || -> std::io::Result<Histogram<u64>> {
        let mut h = histogram();
        let mut buf = vec![0u8; len];
        for _ in 0..n {
            reader_stream.read_exact(&mut buf)?;
            let i = u64::from_le_bytes(buf[len - 8..].try_into().expect("8 bytes"));
            let scheduled = start + period * i as u32;
            let _ = h.record(scheduled.elapsed().as_nanos().max(1) as u64);
        }
        Ok(h)
    });
    super::remote_latency::tight_timer_slack();
    let mut writer = client;
    let mut out = frame.to_vec();
    let mut late = histogram();
    for i in 0..n {
        super::remote_latency::sleep_until(start + period * i as u32, &mut late);
        out[len - 8..].copy_from_slice(&i.to_le_bytes());
        writer.write_all(&out)?;
    }
    let h = reader.join().map_err(|_| "the reader panicked")??;
    echo.join().map_err(|_| "echo panicked")??;
    if h.len() != n {
        return Err(format!("raw open loop: {} of {n} answers recorded", h.len()).into());
    }
    Ok((h, late))
}

/// How a raw round trip waits for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RawWait {
    /// Tokio tasks, each on a current-thread runtime ([`pingpong_once`]).
    Tokio,
    /// Blocking std sockets: the reader parks ([`pingpong_blocking_once`]).
    Blocking,
    /// Non-blocking std sockets spinning on read
    /// ([`pingpong_spinning_once`]).
    Spinning,
}

impl RawWait {
    pub const ALL: [RawWait; 3] = [RawWait::Tokio, RawWait::Blocking, RawWait::Spinning];
}

/// Request/response round trips of one frame, one in flight.
pub struct RoundTrips<'a> {
    pub frame: &'a [u8],
    pub wait: RawWait,
}

impl RoundTrips<'_> {
    /// The rows' `system`.
    pub fn system(&self) -> &'static str {
        match self.wait {
            RawWait::Tokio => "raw-tcp",
            RawWait::Blocking => "raw-tcp (blocking)",
            RawWait::Spinning => "raw-tcp (spinning)",
        }
    }
}

impl Workload for RoundTrips<'_> {
    type Run = Histogram<u64>;
    type Row = RoundTripRow;

    /// `n` measured round trips after `n / 10` unmeasured ones.
    fn run(&mut self, n: u64) -> crate::Result<Histogram<u64>> {
        match self.wait {
            RawWait::Tokio => pingpong_once(self.frame, n, n / 10),
            RawWait::Blocking => pingpong_blocking_once(self.frame, n, n / 10),
            RawWait::Spinning => pingpong_spinning_once(self.frame, n, n / 10),
        }
    }

    fn row(&self, _n: u64, h: Histogram<u64>) -> RoundTripRow {
        let test = match self.wait {
            RawWait::Tokio => "ping-pong RTT, tokio",
            RawWait::Blocking => "ping-pong RTT, std blocking",
            RawWait::Spinning => "ping-pong RTT, busy-polling",
        };
        RoundTripRow {
            test: test.into(),
            frame_bytes: self.frame.len() as u64,
            count: h.len(),
            requests: h.len(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            mean_ns: h.mean(),
            mode: None,
        }
    }

    fn figure(row: &RoundTripRow) -> f64 {
        row.p50_ns as f64
    }
}

/// The one-way frame stream ([`stream_once`]).
struct Stream<'a> {
    frame: &'a [u8],
}

impl Workload for Stream<'_> {
    type Run = Throughput;
    type Row = StreamRow;

    fn run(&mut self, frames: u64) -> crate::Result<Throughput> {
        stream_once(self.frame, frames)
    }

    fn row(&self, _frames: u64, run: Throughput) -> StreamRow {
        let bytes = run.count * self.frame.len() as u64;
        StreamRow {
            test: "one-way stream".into(),
            frame_bytes: self.frame.len() as u64,
            count: run.count,
            elapsed_ns: run.elapsed_ns(),
            msgs_per_sec: run.per_sec(),
            mb_per_sec: bytes as f64 / run.elapsed.as_secs_f64() / 1e6,
        }
    }

    fn figure(row: &StreamRow) -> f64 {
        row.msgs_per_sec
    }
}

fn run(ctx: &Ctx) -> crate::Result<Report<RawTcpRow>> {
    let runs = ctx.cli.runs();
    let quick = ctx.cli.quick;
    let frame = ping_frame();
    let progress = Progress::new(2);
    progress.note(&format!(
        "load before the run: {}; frame = volley's ping frame, {} bytes",
        load(),
        frame.len()
    ));
    let mut report = Report::new(SCENARIO.name, crate::chart::raw_tcp);
    progress.start("raw tcp: one-way frame stream");
    let mut stream = Stream { frame: &frame };
    let n = match ctx.cli.messages {
        Some(n) => n,
        None => {
            let calibration = Calibration::remote(quick, 1_000_000.0, 500_000_000.0);
            // A failed warm-up falls back to the smallest run.
            stream
                .calibrate(2_000_000, &calibration)
                .unwrap_or(calibration.min as u64)
        }
    };
    let stream_row = stream.measure(n, runs)?;
    report
        .rows
        .push(Row::measured("raw-tcp", RawTcpRow::Stream(stream_row)));
    progress.done();
    progress.start("raw tcp: ping-pong round trips");
    let rtts = ctx
        .cli
        .requests
        .unwrap_or(if quick { 20_000 } else { 100_000 });
    for wait in RawWait::ALL {
        let mut round_trips = RoundTrips {
            frame: &frame,
            wait,
        };
        let row = round_trips.measure(rtts, runs)?;
        report.rows.push(Row::measured(
            round_trips.system(),
            RawTcpRow::RoundTrip(row),
        ));
    }
    progress.done();
    progress.finish();
    if let Some(RawTcpRow::Stream(s)) = report.rows.first().and_then(Row::metrics) {
        report.notes.push(format!(
            "30% of the raw frame rate (the remote-tell target's second half): {:.1} M msgs/s",
            0.3 * s.msgs_per_sec / 1e6
        ));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_counted_across_reads() {
        let frame = ping_frame();
        let stream = frame.repeat(10);
        let mut c = FrameCounter::new();
        for chunk in stream.chunks(7) {
            c.feed(chunk);
        }
        assert_eq!(c.frames, 10);
    }

    #[test]
    fn small_runs_count_everything() {
        let frame = ping_frame();
        let run = stream_once(&frame, 10_000).unwrap();
        assert_eq!(run.count, 10_000);
        assert!(run.elapsed > Duration::ZERO);
        let h = pingpong_once(&frame, 200, 20).unwrap();
        assert_eq!(h.len(), 200);
        let h = pingpong_blocking_once(&frame, 200, 20).unwrap();
        assert_eq!(h.len(), 200);
        let h = pingpong_spinning_once(&frame, 200, 20).unwrap();
        assert_eq!(h.len(), 200);
        let mut blocking = RoundTrips {
            frame: &frame,
            wait: RawWait::Blocking,
        };
        let row = blocking.measure(100, 2).unwrap();
        assert_eq!(
            (blocking.system(), row.count, row.requests),
            ("raw-tcp (blocking)", 100, 100)
        );
        assert_eq!(row.test, "ping-pong RTT, std blocking");
    }
}
