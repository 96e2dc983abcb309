//! `DelegatedAuth` against an API server over real HTTPS, through the real
//! kube client built from a kubeconfig the way `serve` builds it: tokens
//! are reviewed (TokenReview), access is asked (SubjectAccessReview),
//! answers are reused within their TTL, and an API server that cannot
//! answer is Unavailable and not remembered. The upstream behaviour pinned is
//! k8s.io/apiserver's delegating authenticator (`cachedTokenAuthenticator`
//! over `WebhookTokenAuthenticator`) and authorizer (`WebhookAuthorizer`).

#[path = "support/fake_apiserver.rs"]
mod fake_apiserver;

use axum::http::StatusCode;
use fake_apiserver::FakeApiServer;
use kube_arbiter::cluster::ClusterView;
use kube_arbiter::cluster::live::resolve_api_config;
use kube_arbiter::server::delegated_auth::{Access, AuthFailure, DelegatedAuth};
use kube_arbiter::server::metrics::Metrics;

const TENANT_A: &str = "system:serviceaccount:tenant-a:default";

async fn delegated_auth(api: &FakeApiServer, metrics: &Metrics) -> DelegatedAuth {
    let config = resolve_api_config(Some(api.kubeconfig())).await.unwrap();
    DelegatedAuth::new(config.client().unwrap(), metrics)
}

/// `kube_arbiter_auth_{what}_total{review, result}` as /metrics shows it.
fn counted(metrics: &Metrics, what: &str, review: &str, result: &str) -> u64 {
    let line =
        format!("kube_arbiter_auth_{what}_total{{review=\"{review}\",result=\"{result}\"}} ");
    let text = metrics.render(&ClusterView::new());
    text.lines()
        .find_map(|l| l.strip_prefix(&line))
        .map_or(0, |n| n.parse().unwrap())
}

fn get_pods(namespace: &str) -> Access {
    Access::Resource {
        verb: "get",
        group: "",
        resource: "pods",
        namespace: Some(namespace.into()),
        name: None,
    }
}

fn get_metrics() -> Access {
    Access::NonResource {
        verb: "get",
        path: "/metrics".into(),
    }
}

/// An API server that knows `token-a` as tenant-a's service account, which
/// a RoleBinding lets get pods in tenant-a only.
async fn api_with_tenant_a() -> FakeApiServer {
    let api = FakeApiServer::start_tls().await;
    api.add_token("token-a", TENANT_A, &["system:serviceaccounts"]);
    api.allow(TENANT_A, "get", "pods", Some("tenant-a"));
    api
}

#[tokio::test]
async fn a_token_allowed_in_one_namespace_is_forbidden_in_another() {
    let api = api_with_tenant_a().await;
    let metrics = Metrics::new();
    let auth = delegated_auth(&api, &metrics).await;

    let user = auth.authenticate("token-a").await.unwrap();
    assert_eq!(user.name, TENANT_A);
    assert_eq!(user.uid, format!("uid-{TENANT_A}"));
    assert_eq!(
        user.groups,
        ["system:serviceaccounts", "system:authenticated"]
    );

    auth.authorize(&user, &get_pods("tenant-a")).await.unwrap();
    let refused = auth.authorize(&user, &get_pods("tenant-b")).await;
    assert_eq!(
        refused,
        Err(AuthFailure::Forbidden(format!(
            r#"user "{TENANT_A}" may not get pods in namespace "tenant-b""#
        )))
    );
    assert_eq!(refused.unwrap_err().status(), StatusCode::FORBIDDEN);

    let everywhere = Access::Resource {
        verb: "get",
        group: "",
        resource: "pods",
        namespace: None,
        name: None,
    };
    let refused = auth.authorize(&user, &everywhere).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .ends_with("may not get pods at the cluster scope"),
        "{refused}"
    );
}

#[tokio::test]
async fn metrics_is_the_non_resource_url_get_metrics() {
    let api = api_with_tenant_a().await;
    api.add_token("token-prom", "prometheus", &[]);
    api.allow_non_resource("prometheus", "get", "/metrics");
    let metrics = Metrics::new();
    let auth = delegated_auth(&api, &metrics).await;

    let prometheus = auth.authenticate("token-prom").await.unwrap();
    auth.authorize(&prometheus, &get_metrics()).await.unwrap();
    let tenant = auth.authenticate("token-a").await.unwrap();
    let refused = auth.authorize(&tenant, &get_metrics()).await.unwrap_err();
    assert_eq!(
        refused,
        AuthFailure::Forbidden(format!(r#"user "{TENANT_A}" may not get path "/metrics""#))
    );
}

#[tokio::test]
async fn an_unknown_token_is_unauthenticated() {
    let api = api_with_tenant_a().await;
    let metrics = Metrics::new();
    let auth = delegated_auth(&api, &metrics).await;

    let refused = auth.authenticate("not-a-token").await.unwrap_err();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let AuthFailure::Unauthenticated(message) = &refused else {
        panic!("expected Unauthenticated, got {refused:?}");
    };
    assert!(message.contains("invalid bearer token"), "{message}");
    assert_eq!(api.review_count(), 1);

    let empty = auth.authenticate("").await.unwrap_err();
    assert!(
        matches!(empty, AuthFailure::Unauthenticated(_)),
        "{empty:?}"
    );
    assert_eq!(
        api.review_count(),
        1,
        "an empty token is not worth a review"
    );
}

#[tokio::test]
async fn a_repeated_question_within_the_ttl_sends_no_second_review() {
    let api = api_with_tenant_a().await;
    let metrics = Metrics::new();
    let auth = delegated_auth(&api, &metrics).await;

    let user = auth.authenticate("token-a").await.unwrap();
    auth.authorize(&user, &get_pods("tenant-a")).await.unwrap();
    auth.authorize(&user, &get_pods("tenant-b"))
        .await
        .unwrap_err();
    auth.authenticate("not-a-token").await.unwrap_err();
    assert_eq!(api.review_count(), 4);

    // The same four questions again: allowed, denied and unauthenticated
    // answers are all remembered.
    assert_eq!(auth.authenticate("token-a").await.unwrap(), user);
    auth.authorize(&user, &get_pods("tenant-a")).await.unwrap();
    auth.authorize(&user, &get_pods("tenant-b"))
        .await
        .unwrap_err();
    auth.authenticate("not-a-token").await.unwrap_err();
    assert_eq!(api.review_count(), 4);

    for (review, result) in [
        ("token", "authenticated"),
        ("token", "unauthenticated"),
        ("access", "allowed"),
        ("access", "denied"),
    ] {
        assert_eq!(
            counted(&metrics, "reviews", review, result),
            1,
            "{review} {result}"
        );
        assert_eq!(
            counted(&metrics, "cache_hits", review, result),
            1,
            "{review} {result}"
        );
    }

    // A question not asked before is sent.
    auth.authorize(&user, &get_pods("tenant-c"))
        .await
        .unwrap_err();
    assert_eq!(api.review_count(), 5);
    assert_eq!(counted(&metrics, "reviews", "access", "denied"), 2);
    let reviews: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.contains("reviews"))
        .collect();
    let token_reviews = reviews
        .iter()
        .filter(|r| r.contains("tokenreviews"))
        .count();
    assert_eq!(token_reviews, 2, "{reviews:?}");
}

#[tokio::test]
async fn an_api_server_that_is_down_is_unavailable_and_not_remembered() {
    let mut api = api_with_tenant_a().await;
    api.add_token("token-b", "system:serviceaccount:tenant-b:default", &[]);
    let metrics = Metrics::new();
    let auth = delegated_auth(&api, &metrics).await;
    let user = auth.authenticate("token-a").await.unwrap();
    auth.authorize(&user, &get_pods("tenant-a")).await.unwrap();

    api.stop().await;
    // What was answered before the outage is still answered from the cache.
    assert_eq!(auth.authenticate("token-a").await.unwrap(), user);
    auth.authorize(&user, &get_pods("tenant-a")).await.unwrap();
    // New questions cannot be answered.
    let down = auth.authenticate("token-b").await.unwrap_err();
    assert_eq!(down.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(down.to_string().contains("TokenReview"), "{down}");
    let down = auth
        .authorize(&user, &get_pods("tenant-b"))
        .await
        .unwrap_err();
    assert!(matches!(down, AuthFailure::Unavailable(_)), "{down:?}");
    assert!(down.to_string().contains("SubjectAccessReview"), "{down}");
    assert_eq!(counted(&metrics, "reviews", "token", "unavailable"), 1);
    assert_eq!(counted(&metrics, "reviews", "access", "unavailable"), 1);

    // Back up: the failures were not cached.
    api.restart().await;
    let b = auth.authenticate("token-b").await.unwrap();
    assert_eq!(b.name, "system:serviceaccount:tenant-b:default");
    let refused = auth.authorize(&user, &get_pods("tenant-b")).await;
    assert!(
        matches!(refused, Err(AuthFailure::Forbidden(_))),
        "{refused:?}"
    );
}

/// The router shares one `DelegatedAuth` among request tasks on every
/// worker thread: it and its futures are Send + Sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_tasks_on_many_threads_share_one_delegated_auth() {
    let api = api_with_tenant_a().await;
    let metrics = Metrics::new();
    let auth = std::sync::Arc::new(delegated_auth(&api, &metrics).await);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let auth = auth.clone();
            tokio::spawn(async move {
                let user = auth.authenticate("token-a").await?;
                auth.authorize(&user, &get_pods("tenant-a")).await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    // Concurrent first questions may each be sent; later ones are not.
    let sent = api.review_count();
    assert!((2..=16).contains(&sent), "{sent}");
    auth.authorize(
        &auth.authenticate("token-a").await.unwrap(),
        &get_pods("tenant-a"),
    )
    .await
    .unwrap();
    assert_eq!(api.review_count(), sent);
}
