//! The grpc-go peer (`bench/peers/grpc-go`): grpc_bench's go_grpc
//! Greeter, built with `go build` before each run (a no-op when nothing
//! changed). Its protobuf code is generated from
//! `crates/volley-grpc/proto/helloworld.proto` and committed, so building
//! needs Go and its module proxy, not protoc.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::which;
use crate::progress::Progress;

/// The harness's binary, built if need be.
pub(super) fn greeter(root: &Path, progress: &Progress, no_build: bool) -> Result<PathBuf, String> {
    let dir = root.join("bench/peers/grpc-go");
    let exe = dir.join("greeter-go");
    if no_build {
        return if exe.is_file() {
            Ok(exe)
        } else {
            Err("not built (--no-build)".into())
        };
    }
    let go = which("go").ok_or("no Go toolchain to build it with")?;
    progress.note("building bench/peers/grpc-go (go build)");
    let status = progress.suspend(|| {
        Command::new(go)
            .current_dir(&dir)
            .args(["build", "-o", "greeter-go", "."])
            .status()
    });
    match status {
        Ok(s) if s.success() && exe.is_file() => Ok(exe),
        Ok(s) => Err(format!("go build in {} failed ({s})", dir.display())),
        Err(e) => Err(format!("cannot run go: {e}")),
    }
}
