//! What the CLI prints, to standard output and standard error, as `println!` and
//! `eprintln!` print it, without their panic when the reader has gone (`loaderbench run …
//! | head`, a closed terminal): the run, its journal and its exports go on, and the exit
//! code is the run's. A stream that fails otherwise (a full disk behind `> out.txt`) is
//! said once on standard error.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Which stream a line goes to.
#[derive(Clone, Copy)]
pub enum Stream {
    Out,
    Err,
}

/// Writes `text` to `stream`.
pub fn write(stream: Stream, text: fmt::Arguments<'_>) {
    let written = match stream {
        Stream::Out => std::io::stdout().lock().write_fmt(text),
        Stream::Err => std::io::stderr().lock().write_fmt(text),
    };
    if let Err(err) = written
        && err.kind() != ErrorKind::BrokenPipe
    {
        static SAID: AtomicBool = AtomicBool::new(false);
        if !SAID.swap(true, Ordering::Relaxed) {
            let name = match stream {
                Stream::Out => "standard output",
                Stream::Err => "standard error",
            };
            let _ = writeln!(
                std::io::stderr(),
                "warning: {name} cannot be written: {err}"
            );
        }
    }
}

/// `print!` without the panic (see the module).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::say::write($crate::cli::say::Stream::Out, format_args!($($arg)*))
    };
}

/// [`write`], then a newline.
pub fn write_line(stream: Stream, text: fmt::Arguments<'_>) {
    write(stream, format_args!("{text}\n"));
}

/// `println!` without the panic (see the module).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::say::write_line($crate::cli::say::Stream::Out, format_args!($($arg)*))
    };
}

/// `eprintln!` without the panic (see the module).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::cli::say::write_line($crate::cli::say::Stream::Err, format_args!($($arg)*))
    };
}
