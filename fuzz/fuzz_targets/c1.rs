#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // libfuzzer-sys aborts at any panic, even one the service catches and refuses as bad
    // input (circuits::refusing_panics): the default hook back, only a panic that escapes the
    // call aborts (libfuzzer-sys checks the call's unwinding itself).
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| drop(std::panic::take_hook()));
    cuzk::fuzz::c1(data);
});
