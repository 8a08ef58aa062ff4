//! Every chart `--chart FILE.svg` can write, in one place: the shapes
//! ([`draw`]), and what each scenario plots with them ([`local`] for the
//! in-process scenarios, [`remote`] for the remote ones and raw TCP, [`grpc`]
//! for the gRPC servers, [`web`] for the web gateway).
//! SVG only (plotters' SVG backend, no font files: text is written as SVG
//! `<text>` and its size estimated).

mod draw;
mod grpc;
mod local;
mod remote;
mod web;

pub use draw::{bars, lines, log_lines, BarPanel, Line, LinePanel};
pub use grpc::grpc;
pub use local::{ask_local, local_pingpong, spawn};
pub use remote::{raw_tcp, remote_latency, remote_pingpong, throughput_bars};
pub use web::web;

use plotters::style::RGBColor;

/// A fixed colour per system, so charts are comparable.
pub fn color(system: &str) -> RGBColor {
    // "volley (mode)" is volley's colour.
    match system.split(' ').next().unwrap_or(system) {
        "volley" => RGBColor(214, 39, 40),
        "tokio" => RGBColor(110, 110, 110),
        "actix" => RGBColor(31, 119, 180),
        "ractor" => RGBColor(44, 160, 44),
        "kameo" => RGBColor(255, 127, 14),
        "pekko" => RGBColor(148, 103, 189),
        _ => RGBColor(23, 190, 207),
    }
}

/// A darker (`k` < 1) or lighter shade of a colour, for variants of one
/// system.
pub fn shade(c: RGBColor, k: f64) -> RGBColor {
    let f = |v: u8| ((v as f64) * k).clamp(0.0, 255.0) as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}

fn err(e: impl std::fmt::Display) -> crate::Error {
    format!("chart: {e}").into()
}
