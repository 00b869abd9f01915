//! The `loaderbench` binary: hands over to the command line, which loads CUDA only for
//! the commands that may use a CUDA device.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
