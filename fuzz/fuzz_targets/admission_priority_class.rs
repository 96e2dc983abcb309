//! AdmissionReview bodies through the validating PriorityClass webhook's own
//! decode-decide-encode function on the demo cluster.
#![no_main]

use kube_arbiter::api::admission::review_priority_class;
use kube_arbiter_fuzz::{DEMO_STATE, check_review, decided};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    if let Ok(answer) = decided(review_priority_class(&DEMO_STATE, body)) {
        check_review(body, &answer);
    }
});
