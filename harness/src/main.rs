use clap::Parser;

/// mimalloc rather than the system allocator: the harness and the embedded
/// reference share one process with thousands of tasks and connections, where
/// glibc malloc spent a quarter of the CPU of live fuzzing (harness/benches/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = agentconform::cli::Cli::parse();
    std::process::exit(agentconform::cli::main_with(cli));
}
