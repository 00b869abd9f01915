//! The `loaderbench` binary: loads CUDA where it is installed, then hands over to the
//! command line.

mod cli;

fn main() -> std::process::ExitCode {
    loaderbench::device::load_cuda();
    cli::main()
}
