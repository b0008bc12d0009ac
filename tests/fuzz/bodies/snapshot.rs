// Bytes read back as a stored snapshot file: only a well-framed file whose
// payload hashes to the key it was asked for may verify, and nothing panics.
// Shared by the fuzz target and the `it` binary, which runs it over the
// committed seeds.

use mcp_v8_lambda::heap::{HEADER_LEN, HeapKey, Snapshot};

pub fn run(data: &[u8]) {
    // The key the payload would have, so the fuzzer gets past the hash check
    // and into the framing.
    let payload = data.get(HEADER_LEN..).unwrap_or_default();
    let key = HeapKey::of_payload(payload);
    if let Ok(snapshot) = Snapshot::verify(&key, data.to_vec().into()) {
        assert_eq!(snapshot.key(), &key);
        assert_eq!(snapshot.payload(), payload);
        assert_eq!(&snapshot.framed()[..], data);
    }
    let _ = Snapshot::verify(&HeapKey::of_payload(b"other"), data.to_vec().into());
}
