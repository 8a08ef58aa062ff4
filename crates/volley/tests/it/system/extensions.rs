//! Extensions (Akka's `registerExtension`): one value per type and per
//! system, the first registered staying.

use volley::ActorSystem;

#[derive(Clone, Debug, PartialEq)]
struct Marker(u32);

#[tokio::test]
async fn a_system_keeps_one_extension_per_type_and_the_first_stays() {
    let system = ActorSystem::new("extensions").unwrap();
    let other = ActorSystem::new("extensions").unwrap();
    assert_eq!(system.extension::<Marker>(), None);
    assert_eq!(system.register_extension(Marker(1)), Ok(()));
    assert_eq!(system.register_extension(Marker(2)), Err(Marker(2)));
    assert_eq!(system.extension::<Marker>(), Some(Marker(1)));
    assert_eq!(system.extension::<String>(), None, "one value per type");
    assert_eq!(other.extension::<Marker>(), None, "one value per system");
    system.terminate().await;
    other.terminate().await;
}
