//! Worker processes with real children and real libtorch: spawned and forked workers
//! deliver exactly the batches thread workers do (every sample once per epoch), through
//! shared memory or the pipe, with the dataset reopened or copied; persistent pools start
//! once; and a worker that is killed or hangs, or a cancel, ends the epoch promptly with
//! a clear error and leaves no child process and no segment behind. Workers live as
//! long as the process, not the thread that started them. Spawned workers
//! reopening a dataset without files all map one sealed image the loader made once. A
//! forked worker's panic is reported even when a lock its panic hook takes was held at
//! the fork. Spawned workers reopen an image folder from the loader's listing.

#![cfg(unix)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use loaderbench_engine::Error;
use loaderbench_engine::Result;
use loaderbench_engine::cancel::CancelToken;
use loaderbench_engine::dataset::{self, Dataset, DatasetSpec, PixelKind, SampleShape};
use loaderbench_engine::loader::process::{ProcessKind, ProcessWorkers};
use loaderbench_engine::loader::{Loader, LoaderSettings};
use loaderbench_engine::preset::{BatchTransfer, DatasetTransfer, TransformAt};
use loaderbench_engine::transform::{Normalize, Pipeline, PipelineSpec};
use tch::Tensor;

/// The leak checks look at this whole process's children and descriptors, so tests that
/// start workers run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const SAMPLES: usize = 100;

mod common;
use common::loader_settings as settings;
use common::process::{Seen, children_of};

fn processes(kind: ProcessKind, data: DatasetTransfer, batches: BatchTransfer) -> ProcessWorkers {
    ProcessWorkers {
        kind,
        dataset: Some(DatasetSpec::default()),
        samples: Some(SAMPLES),
        pipeline: PipelineSpec::Light,
        transform_at: Default::default(),
        normalize: Normalize::default(),
        dataset_transfer: data,
        batch_transfer: batches,
        executable: Some(PathBuf::from(env!("CARGO_BIN_EXE_loaderbench"))),
    }
}

fn loader(dataset: Arc<dyn Dataset>, settings: LoaderSettings, cancel: CancelToken) -> Loader {
    common::light_loader(dataset, 1, settings, cancel)
}

/// The first error of an epoch of `dataset` on forked workers (each reopening the
/// dataset, the batches sent through `batches`), when the epoch began, and the loader.
fn forked_first_error(
    dataset: Arc<dyn Dataset>,
    settings: LoaderSettings,
    batches: BatchTransfer,
) -> (String, Instant, Loader) {
    let workers = processes(ProcessKind::Fork, DatasetTransfer::Reopen, batches);
    let mut loader = loader(dataset, settings, CancelToken::new()).with_processes(workers);
    let started = Instant::now();
    let message = common::first_error(&mut loader).to_string();
    (message, started, loader)
}

fn synthetic() -> Arc<dyn Dataset> {
    dataset::open(&DatasetSpec::default(), Some(SAMPLES)).unwrap()
}

/// Every batch of one epoch: labels and images, in the order they came.
fn epoch(loader: &mut Loader) -> (Vec<Vec<i64>>, Vec<Tensor>, usize) {
    let mut epoch = loader.epoch().unwrap();
    let (mut labels, mut images) = (Vec::new(), Vec::new());
    for batch in epoch.by_ref() {
        let batch = batch.unwrap();
        labels.push(Vec::<i64>::try_from(&batch.labels).unwrap());
        images.push(batch.images);
    }
    let startups = epoch.take_worker_startups().len();
    (labels, images, startups)
}

/// This process's child processes, from every thread's children list.
fn children() -> Vec<u32> {
    children_of(std::process::id())
}

/// This process's descriptors of shared memory named `name` (a memfd's name shows in
/// its link), as paths under `/proc/self/fd`.
fn memfds_open(name: &str) -> Vec<PathBuf> {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|fd| fd.path())
        .filter(|fd| {
            std::fs::read_link(fd).is_ok_and(|target| target.to_string_lossy().contains(name))
        })
        .collect()
}

fn assert_nothing_left() {
    if cfg!(target_os = "linux") {
        assert_eq!(
            children(),
            Vec::<u32>::new(),
            "worker processes outlived the pool"
        );
        assert_eq!(
            memfds_open("loaderbench-batches"),
            Vec::<PathBuf>::new(),
            "segments outlived the pool"
        );
        assert_eq!(
            memfds_open("loaderbench-dataset"),
            Vec::<PathBuf>::new(),
            "the shared dataset image outlived its loader"
        );
    }
}

#[test]
fn spawned_and_forked_workers_deliver_the_thread_workers_batches() {
    let _serial = serial();
    let dataset = synthetic();
    let (reference, reference_images, _) = epoch(&mut loader(
        dataset.clone(),
        settings(2, false),
        CancelToken::new(),
    ));
    let mut all: Vec<i64> = reference.concat();
    let mut expected: Vec<i64> = (0..SAMPLES).map(|i| label(&*dataset, i)).collect();
    all.sort_unstable();
    expected.sort_unstable();
    assert_eq!(all, expected, "every sample once");
    for kind in [ProcessKind::Spawn, ProcessKind::Fork] {
        for data in [DatasetTransfer::Reopen, DatasetTransfer::Copy] {
            for batches in [BatchTransfer::SharedMemory, BatchTransfer::Pipe] {
                let what = format!("{kind:?} {data:?} {batches:?}");
                let mut loader = loader(dataset.clone(), settings(2, false), CancelToken::new())
                    .with_processes(processes(kind, data, batches));
                let (labels, images, startups) = epoch(&mut loader);
                assert_eq!(labels, reference, "{what}");
                assert_eq!(startups, 2, "{what}");
                for (a, b) in images.iter().zip(&reference_images) {
                    assert!(
                        a.equal(b),
                        "{what}: a batch differs from the thread workers'"
                    );
                }
                drop(loader);
                assert_nothing_left();
            }
        }
    }
}

/// Spawned workers reopen an image folder from the loader's listing, cut to the run's
/// samples: a file added to the folder after the run opened it (sorting first, so a new
/// walk would shift every index) changes nothing they deliver.
#[test]
fn spawned_workers_reopen_an_image_folder_from_the_loader_s_listing() {
    let _serial = serial();
    let dir = tempfile::TempDir::new().unwrap();
    for class in ["a", "b"] {
        std::fs::create_dir(dir.path().join(class)).unwrap();
        for n in 1..=6u8 {
            let path = dir.path().join(format!("{class}/{n}.png"));
            image::RgbImage::from_pixel(4, 4, image::Rgb([n * 30, n, 9]))
                .save(path)
                .unwrap();
        }
    }
    let spec = DatasetSpec {
        kind: dataset::DatasetKind::ImageFolder,
        path: Some(dir.path().to_path_buf()),
        channels: 1,
        image_size: [4, 4],
        ..DatasetSpec::default()
    };
    let samples = 10;
    let dataset = dataset::open(&spec, Some(samples)).unwrap();
    let (reference, reference_images, _) = epoch(&mut loader(
        dataset.clone(),
        settings(0, false),
        CancelToken::new(),
    ));
    image::RgbImage::from_pixel(4, 4, image::Rgb([255, 255, 255]))
        .save(dir.path().join("a/0.png"))
        .unwrap();
    let workers = ProcessWorkers {
        dataset: Some(spec),
        samples: Some(samples),
        ..processes(
            ProcessKind::Spawn,
            DatasetTransfer::Reopen,
            BatchTransfer::SharedMemory,
        )
    };
    let mut loader =
        loader(dataset, settings(2, false), CancelToken::new()).with_processes(workers);
    let (labels, images, _) = epoch(&mut loader);
    assert_eq!(labels, reference);
    for (a, b) in images.iter().zip(&reference_images) {
        assert!(a.equal(b), "a batch differs from the listing's");
    }
    drop(loader);
    assert_nothing_left();
}

/// The inode of this process's one shared dataset image, checking it is sealed.
fn the_sealed_image() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let images = memfds_open("loaderbench-dataset");
    assert_eq!(images.len(), 1, "one image per loader: {images:?}");
    let fd: i32 = images[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .parse()
        .unwrap();
    // SAFETY: F_GET_SEALS only reads the seals of our own open descriptor.
    let seals = unsafe { libc::fcntl(fd, libc::F_GET_SEALS) };
    let wanted = libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
    assert_eq!(seals & wanted, wanted, "the image is sealed read-only");
    std::fs::metadata(&images[0]).unwrap().ino()
}

#[cfg(target_os = "linux")]
#[test]
fn spawned_workers_reopening_a_dataset_without_files_share_one_sealed_image() {
    let _serial = serial();
    let mut loader =
        loader(synthetic(), settings(2, false), CancelToken::new()).with_processes(processes(
            ProcessKind::Spawn,
            DatasetTransfer::Reopen,
            BatchTransfer::SharedMemory,
        ));
    let mut images = Vec::new();
    for _ in 0..2 {
        let mut epoch = loader.epoch().unwrap();
        // In order, batch 1 comes from worker 1: both workers have started.
        for _ in 0..2 {
            epoch.next().unwrap().unwrap();
        }
        for pid in epoch.worker_pids() {
            let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
            assert!(
                maps.lines()
                    .any(|l| l.contains("loaderbench-dataset") && l.contains(" r--s ")),
                "worker {pid} maps the image read-only and shared:\n{maps}"
            );
        }
        for batch in epoch {
            batch.unwrap();
        }
        images.push(the_sealed_image());
    }
    assert_eq!(images[0], images[1], "a restarted pool reuses the image");
    drop(loader);
    assert_nothing_left();
}

fn label(dataset: &dyn Dataset, index: usize) -> i64 {
    let mut pixels = vec![0; dataset.shape().sample_bytes()];
    dataset.read(index, &mut pixels).unwrap()
}

#[test]
fn persistent_workers_start_once_restarted_ones_every_epoch() {
    let _serial = serial();
    for kind in [ProcessKind::Spawn, ProcessKind::Fork] {
        for persistent in [true, false] {
            let mut loader =
                loader(synthetic(), settings(2, persistent), CancelToken::new()).with_processes(
                    processes(kind, DatasetTransfer::Reopen, BatchTransfer::SharedMemory),
                );
            let (first, _, startups_1) = epoch(&mut loader);
            let (second, _, startups_2) = epoch(&mut loader);
            assert_eq!(startups_1, 2, "{kind:?}");
            assert_eq!(
                startups_2,
                if persistent { 0 } else { 2 },
                "{kind:?} {persistent}"
            );
            assert_ne!(first, second, "a new epoch reshuffles");
            if persistent {
                assert_eq!(
                    children().len(),
                    2,
                    "persistent workers wait between epochs"
                );
            }
            drop(loader);
            assert_nothing_left();
        }
    }
}

#[test]
fn persistent_workers_outlive_the_thread_that_started_them() {
    let _serial = serial();
    for kind in [ProcessKind::Spawn, ProcessKind::Fork] {
        let starter = std::thread::spawn(move || {
            let mut loader =
                loader(synthetic(), settings(2, true), CancelToken::new()).with_processes(
                    processes(kind, DatasetTransfer::Reopen, BatchTransfer::SharedMemory),
                );
            let (_, _, startups) = epoch(&mut loader);
            assert_eq!(startups, 2, "{kind:?}");
            loader
        });
        let mut loader = starter.join().unwrap();
        // The thread that started the pool has ended; its workers must not have.
        let (labels, _, startups) = epoch(&mut loader);
        assert_eq!(startups, 0, "{kind:?}: the same workers serve epoch 2");
        assert_eq!(labels.concat().len(), SAMPLES, "{kind:?}");
        drop(loader);
        assert_nothing_left();
    }
}

/// A journal open while workers are forked is free the moment this process closes it,
/// though the workers run on: no worker keeps a copy holding its lock, which would refuse
/// the journal to `--append` and `resolve` for as long as the workers live.
#[test]
fn a_journal_closed_while_forked_workers_run_is_not_held_by_them() {
    use loaderbench_measure::Journal;
    use loaderbench_measure::fixtures::{config, result};
    use loaderbench_measure::results::RunStatus;

    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    let mut header = result(vec![config(2, true)], Vec::new());
    header.status = RunStatus::Running;
    let mut journal = Journal::create(&path, &header).unwrap();
    let mut loader =
        loader(synthetic(), settings(2, true), CancelToken::new()).with_processes(processes(
            ProcessKind::Fork,
            DatasetTransfer::Reopen,
            BatchTransfer::SharedMemory,
        ));
    let (_, _, startups) = epoch(&mut loader);
    assert_eq!(startups, 2);
    journal.end(&RunStatus::Finished, None).unwrap();
    drop(journal);
    assert_eq!(children().len(), 2, "the persistent workers still run");
    let reopened = Journal::reopen(&path).map(drop);
    assert!(reopened.is_ok(), "{reopened:?}");
    drop(loader);
    assert_nothing_left();
}

/// Synthetic samples that take `delay` each to read, so an epoch lasts long enough to
/// interfere with.
struct Slow {
    inner: Arc<dyn Dataset>,
    delay: Duration,
    hang_at: Option<usize>,
}

impl Dataset for Slow {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn shape(&self) -> SampleShape {
        self.inner.shape()
    }
    fn read(&self, index: usize, pixels: &mut [u8]) -> Result<i64> {
        if self.hang_at == Some(index) {
            std::thread::sleep(Duration::from_secs(3600));
        }
        std::thread::sleep(self.delay);
        self.inner.read(index, pixels)
    }
    fn describe(&self) -> String {
        "slow".to_owned()
    }
}

fn slow(delay: Duration, hang_at: Option<usize>) -> Arc<dyn Dataset> {
    assert_eq!(synthetic().shape().pixel, PixelKind::U8);
    Arc::new(Slow {
        inner: dataset::open(&DatasetSpec::default(), Some(400)).unwrap(),
        delay,
        hang_at,
    })
}

#[test]
fn a_killed_worker_ends_the_epoch_within_two_seconds_and_leaves_nothing() {
    let _serial = serial();
    for kind in [ProcessKind::Spawn, ProcessKind::Fork] {
        // Spawned workers cannot reopen a dataset made in code; they get a copy.
        let mut loader = loader(
            slow(Duration::from_millis(2), None),
            settings(2, false),
            CancelToken::new(),
        )
        .with_processes(processes(
            kind,
            DatasetTransfer::Copy,
            BatchTransfer::SharedMemory,
        ));
        let mut epoch = loader.epoch().unwrap();
        epoch.next().unwrap().unwrap();
        let pids = epoch.worker_pids();
        assert_eq!(pids.len(), 2);
        // SAFETY: the pid is our own live, unreaped worker.
        assert_eq!(unsafe { libc::kill(pids[1] as i32, libc::SIGKILL) }, 0);
        let killed = Instant::now();
        let error = loop {
            match epoch.next() {
                Some(Ok(_)) => continue,
                Some(Err(error)) => break error,
                None => panic!("{kind:?}: the epoch finished without its killed worker"),
            }
        };
        let waited = killed.elapsed();
        let message = error.to_string();
        assert!(matches!(error, Error::Run { .. }), "{message}");
        assert!(
            message.contains("loader-worker-1") && message.contains(&pids[1].to_string()),
            "{message}"
        );
        assert!(message.contains("SIGKILL"), "{message}");
        assert!(waited < Duration::from_secs(2), "{kind:?}: took {waited:?}");
        drop(epoch);
        drop(loader);
        assert_nothing_left();
    }
}

#[test]
fn a_hung_worker_is_reported_after_the_timeout_and_killed() {
    let _serial = serial();
    let mut settings = settings(2, false);
    settings.worker_timeout = Duration::from_millis(800);
    settings.shuffle = false;
    let dataset = slow(Duration::ZERO, Some(0));
    let (message, started, loader) = forked_first_error(dataset, settings, BatchTransfer::Pipe);
    assert!(
        message.contains("loader-worker-0") && message.contains("hung"),
        "{message}"
    );
    drop(loader);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_nothing_left();
}

#[test]
fn cancelling_stops_every_worker_within_a_second() {
    let _serial = serial();
    for kind in [ProcessKind::Spawn, ProcessKind::Fork] {
        let cancel = CancelToken::new();
        let mut loader = loader(
            slow(Duration::from_millis(5), None),
            settings(3, true),
            cancel.clone(),
        )
        .with_processes(processes(kind, DatasetTransfer::Copy, BatchTransfer::Pipe));
        let mut epoch = loader.epoch().unwrap();
        epoch.next().unwrap().unwrap();
        cancel.cancel();
        let cancelled = Instant::now();
        // A batch that has already arrived may still be handed out; the next wait stops.
        let outcome = epoch.find_map(|batch| batch.err());
        drop(epoch);
        drop(loader);
        let waited = cancelled.elapsed();
        assert!(
            matches!(outcome, Some(Error::Cancelled)),
            "{kind:?}: {outcome:?}"
        );
        assert!(waited < Duration::from_secs(1), "{kind:?}: took {waited:?}");
        assert_nothing_left();
    }
}

#[test]
fn spawned_worker_reports_a_dataset_it_cannot_open() {
    let _serial = serial();
    let mut spec = processes(
        ProcessKind::Spawn,
        DatasetTransfer::Reopen,
        BatchTransfer::Pipe,
    );
    spec.dataset = Some(DatasetSpec {
        kind: dataset::DatasetKind::Npy,
        path: Some(PathBuf::from("/no/such/data.npy")),
        ..DatasetSpec::default()
    });
    let mut loader =
        loader(synthetic(), settings(1, false), CancelToken::new()).with_processes(spec);
    let error = loader.epoch().unwrap().find_map(|b| b.err()).unwrap();
    let message = error.to_string();
    assert!(
        message.contains("loader-worker-0 could not start") && message.contains("data.npy"),
        "{message}"
    );
    drop(loader);
    assert_nothing_left();
}

#[test]
fn cli_runs_a_sweep_with_spawned_workers() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_loaderbench"))
        .args(["run", "seed-light", "--quiet", "--set", "worker_kind=spawn"])
        .args([
            "--set",
            "samples=1024",
            "--set",
            "num_workers=2",
            "--set",
            "epochs=1",
        ])
        .args(["--set", "batch_transfer=shared_memory,pipe"])
        .arg("--journal")
        .arg(dir.path().join("journal.jsonl"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let result: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let results = result["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for run in results {
        assert_eq!(run["config"]["worker_kind"], "spawn");
        // Each worker sampled as a process of its config, with its own memory.
        let processes = run["processes"].as_array().unwrap();
        let workers: Vec<&serde_json::Value> =
            processes.iter().filter(|p| p["kind"] == "worker").collect();
        assert_eq!(workers.len(), 2, "{run}");
        let peak = &workers[0]["epochs"][0]["peak_pss_bytes"];
        assert!(peak.as_u64().unwrap() > 0, "{run}");
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("batch transfer") && stdout.contains("pipe"),
        "{stdout}"
    );
}

#[test]
#[cfg(target_os = "linux")]
fn workers_exit_when_the_loader_process_is_killed() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut cli = std::process::Command::new(env!("CARGO_BIN_EXE_loaderbench"))
        .args([
            "run",
            "seed-heavy-spawn",
            "--quiet",
            "--set",
            "num_workers=2",
        ])
        .args(["--set", "extra_configs=[]", "--set", "samples=12800"])
        .arg("--journal")
        .arg(dir.path().join("journal.jsonl"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let workers = common::wait_for(Duration::from_secs(60), "the run's two workers", || {
        let workers: Vec<Seen> = children_of(cli.id())
            .into_iter()
            .filter_map(Seen::now)
            .collect();
        (workers.len() == 2).then_some(workers)
    });
    cli.kill().unwrap();
    cli.wait().unwrap();
    // Those still running after two seconds are what the assertion reports.
    common::poll(Duration::from_secs(2), || {
        (!workers.iter().any(Seen::running)).then_some(())
    });
    let left: Vec<Seen> = workers.into_iter().filter(Seen::running).collect();
    assert!(
        left.is_empty(),
        "workers {left:?} outlived their killed parent"
    );
}

#[test]
fn spawned_workers_run_the_pipeline_per_sample_when_told() {
    let _serial = serial();
    let dataset = synthetic();
    let heavy = |at: TransformAt| {
        Pipeline::new(&PipelineSpec::Heavy, &Normalize::default(), 1)
            .unwrap()
            .at(at)
    };
    let images = |at: TransformAt, workers: Option<ProcessWorkers>| {
        let mut loader = Loader::new(
            dataset.clone(),
            Arc::new(heavy(at)),
            settings(2, false),
            CancelToken::new(),
        )
        .unwrap();
        if let Some(workers) = workers {
            loader = loader.with_processes(workers);
        }
        epoch(&mut loader).1
    };
    let per_sample = images(TransformAt::Sample, None);
    let mut spawned = processes(
        ProcessKind::Spawn,
        DatasetTransfer::Reopen,
        BatchTransfer::SharedMemory,
    );
    spawned.pipeline = PipelineSpec::Heavy;
    spawned.transform_at = TransformAt::Sample;
    let from_workers = images(TransformAt::Sample, Some(spawned));
    assert_eq!(from_workers.len(), per_sample.len());
    for (a, b) in from_workers.iter().zip(&per_sample) {
        assert!(
            a.equal(b),
            "a spawned worker's batch differs from the threads'"
        );
    }
    // Per sample, each sample draws its parameters in turn: other batches than batched.
    let batched = images(TransformAt::Batch, None);
    assert!(!batched[0].equal(&per_sample[0]));
    assert_nothing_left();
}

mod forked_panics {
    use super::*;

    /// A dataset whose every read panics.
    struct Panicking;

    impl Dataset for Panicking {
        fn len(&self) -> usize {
            SAMPLES
        }
        fn shape(&self) -> SampleShape {
            synthetic().shape()
        }
        fn read(&self, index: usize, _pixels: &mut [u8]) -> Result<i64> {
            panic!("sample {index} is cursed")
        }
        fn describe(&self) -> String {
            "panicking".to_owned()
        }
    }

    /// The lock the program's panic hook takes, held by another thread when the worker
    /// forks (as stderr's or the backtrace printer's can be), so that a forked child
    /// that ran the hook would wait for it for ever.
    static HOOK_LOCK: Mutex<()> = Mutex::new(());

    #[test]
    fn a_forked_worker_that_panics_is_reported_though_its_panic_hook_s_lock_was_held_at_fork() {
        if !common::in_own_process(
            module_path!(),
            "a_forked_worker_that_panics_is_reported_though_its_panic_hook_s_lock_was_held_at_fork",
            |_| {},
        ) {
            return;
        }
        // Only a child takes the lock: the test's own panics still print.
        let test_process = std::process::id();
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _held = (std::process::id() != test_process).then(|| HOOK_LOCK.lock());
            hook(info);
        }));
        let (held, holding) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _held = HOOK_LOCK.lock().unwrap();
            held.send(()).unwrap();
            loop {
                std::thread::park();
            }
        });
        holding.recv().unwrap();
        let batches = BatchTransfer::SharedMemory;
        let (message, started, _loader) =
            forked_first_error(Arc::new(Panicking), settings(1, false), batches);
        assert!(
            message.contains("crashed") && message.contains("is cursed"),
            "{message} after {:?}",
            started.elapsed()
        );
    }
}
