use std::process::ExitCode;

use clap::Parser;
use kube_arbiter::cli::Cli;

kube_arbiter::serving_allocator!();

fn main() -> ExitCode {
    kube_arbiter::app::run(Cli::parse())
}
