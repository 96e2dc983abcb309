//! ExtenderBindingArgs bodies through the bind handler's decoder and its
//! check of the fields a binding needs.
#![no_main]

use kube_arbiter::api::bind::bind_request;
use kube_arbiter::wire::binding::ExtenderBindingArgs;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|body: &[u8]| {
    let Ok(args) = serde_json::from_slice::<ExtenderBindingArgs>(body) else {
        return;
    };
    if let Ok(request) = bind_request(args) {
        assert!(!request.name.is_empty() && !request.namespace.is_empty());
        assert!(!request.node.is_empty());
    }
});
