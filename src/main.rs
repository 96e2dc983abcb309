use std::process::ExitCode;

use clap::Parser;
use kube_arbiter::cli::Cli;

fn main() -> ExitCode {
    kube_arbiter::app::run(Cli::parse())
}
