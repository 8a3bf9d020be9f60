//! Writing to the program's stdout and stderr. `println!` and `eprintln!` panic when the stream is a
//! closed pipe (`yiem chat 2>&1 | head`, a reader that went away), which ends the program with exit
//! 101; these macros write the same text and leave a failed write unsaid, as the rest of the program
//! does with `let _ = writeln!(..)`. Clippy's `print_stdout` and `print_stderr` keep the panicking
//! macros out of the program (see `main.rs`).

/// `eprintln!` that never panics.
macro_rules! say_err {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` that never panics.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` that never panics, flushed so that a prompt shows before the program reads its answer.
macro_rules! say_inline {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = write!(out, $($arg)*);
        let _ = out.flush();
    }};
}
