#!/usr/bin/env bash
# Builds the peer harnesses used by volley-bench:
#   bench/peers/rust/target/release/volley-peers   (actix, ractor, kameo, tokio)
#   bench/peers/rust/target/cluster/release/volley-peers
#                                                   (ractor_cluster, remote-pingpong;
#                                                    a separate build: ractor's
#                                                    `cluster` feature changes
#                                                    local ractor too)
#   bench/peers/pekko/target/pekko-bench.jar        (Apache Pekko)
#   bench/peers/pekko-cluster/target/pekko-cluster-bench.jar
#                                                   (Pekko Cluster and Cluster
#                                                    Sharding, a newer Pekko:
#                                                    its own project)
#   bench/peers/kontraktor/target/kontraktor-bench.jar
#                                                   (kontraktor 4.22, the
#                                                    seed's tell/ask sum;
#                                                    the kontraktor scenario
#                                                    also builds it itself)
#   bench/peers/pekko-grpc/target/pekko-grpc-bench.jar
#                                                   (Apache Pekko gRPC; the
#                                                    grpc scenario also builds
#                                                    it itself)
# A missing toolchain skips that harness with a note instead of failing, so a
# machine without Java can still build and run the Rust peers (and vice versa).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
built=0

if command -v cargo >/dev/null 2>&1; then
    echo "build.sh: building bench/peers/rust (release)" >&2
    cargo build --release --manifest-path bench/peers/rust/Cargo.toml
    echo "build.sh: building bench/peers/rust with ractor_cluster (release)" >&2
    cargo build --release --manifest-path bench/peers/rust/Cargo.toml \
        --features cluster --target-dir bench/peers/rust/target/cluster
    built=$((built + 1))
else
    echo "build.sh: cargo not found; skipping the Rust peers" >&2
fi

if command -v mvn >/dev/null 2>&1 && command -v java >/dev/null 2>&1; then
    echo "build.sh: building bench/peers/pekko" >&2
    mvn -q -B -f bench/peers/pekko/pom.xml package -DskipTests
    echo "build.sh: building bench/peers/pekko-cluster" >&2
    mvn -q -B -f bench/peers/pekko-cluster/pom.xml package -DskipTests
    echo "build.sh: building bench/peers/pekko-grpc" >&2
    mvn -q -B -f bench/peers/pekko-grpc/pom.xml package -DskipTests
    echo "build.sh: building bench/peers/kontraktor" >&2
    mvn -q -B -f bench/peers/kontraktor/pom.xml package -DskipTests
    built=$((built + 1))
else
    echo "build.sh: mvn or java not found; skipping the Pekko and kontraktor peers" >&2
fi

echo "build.sh: built $built of 2 harnesses" >&2
