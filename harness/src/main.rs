use clap::Parser;

fn main() {
    let cli = agentconform::cli::Cli::parse();
    std::process::exit(agentconform::cli::main_with(cli));
}
