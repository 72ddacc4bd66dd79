//! The directory store end to end on a temporary directory; the S3 store is exercised
//! against a real Garage server by the `offload` integration tests.

use crate::{md5_hex, multipart_etag, Store, StoreError};

#[test]
fn multipart_etag_is_md5_of_part_md5s() {
    // Two parts "a" and "b": md5(md5("a") ++ md5("b")) as S3 computes it.
    let parts = [md5_hex(b"a"), md5_hex(b"b")];
    let mut cat = Vec::new();
    for p in &parts {
        cat.extend((0..16).map(|i| u8::from_str_radix(&p[2 * i..2 * i + 2], 16).unwrap()));
    }
    let want = format!("{}-2", md5_hex(&cat));
    assert_eq!(multipart_etag(parts.iter().map(String::as_str)), want);
}

#[test]
fn directory_upload_in_parts_survives_a_new_handle() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().to_str().unwrap()).unwrap();
    store.check().unwrap();
    let id = store.create_upload("t/a/data.bin").unwrap();
    let p0 = store
        .put_part("t/a/data.bin", &id, 0, 0, vec![1; 10])
        .unwrap();
    // As after a restart: another handle finishes the upload with the journalled tags.
    let store = Store::open(tmp.path().to_str().unwrap()).unwrap();
    let p1 = store
        .put_part("t/a/data.bin", &id, 1, 10, vec![2; 5])
        .unwrap();
    assert!(
        store.head("t/a/data.bin").unwrap().is_none(),
        "not visible before complete"
    );
    let info = store
        .complete_upload("t/a/data.bin", &id, &[p0.clone(), p1.clone()])
        .unwrap();
    assert_eq!(info.size, 15);
    assert_eq!(
        info.etag.unwrap(),
        multipart_etag([p0.etag.as_str(), p1.etag.as_str()])
    );
    let mut want = vec![1; 10];
    want.extend([2; 5]);
    assert_eq!(
        std::fs::read(tmp.path().join("t/a/data.bin")).unwrap(),
        want
    );
    assert_eq!(
        store.get_range("t/a/data.bin", 8..12).unwrap(),
        [1, 1, 2, 2]
    );
    // Completed: the upload is gone, as S3 says of a completed one.
    assert!(matches!(
        store.complete_upload("t/a/data.bin", &id, &[p0, p1]),
        Err(StoreError::NoSuchUpload { .. })
    ));
}

#[test]
fn directory_keys_cannot_leave_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().to_str().unwrap()).unwrap();
    for key in ["../x", "/etc/x", "a//b", "a/./b", ""] {
        assert!(store.put(key, vec![1]).is_err(), "{key}");
    }
}

#[test]
fn a_missing_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let err = Store::open(tmp.path().join("nas").to_str().unwrap())
        .err()
        .unwrap();
    assert!(err.to_string().contains("is the NAS mounted"), "{err}");
}
