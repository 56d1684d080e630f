fn main() -> std::process::ExitCode {
    cuzk::cli::run()
}
