fn main() -> std::process::ExitCode {
    ralph::main()
}
