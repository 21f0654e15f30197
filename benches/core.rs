//! The pure core at 1k, 10k and 100k tasks: parsing both files, choosing
//! the next task, applying a patch and writing the file atomically, trigger
//! evaluation and prompt rendering. Run with `cargo bench`; `scripts/bench.sh`
//! compares the whole binary with the shell recipes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

use ralph::bench_data::{PendingAt, Spec, tasks_jsonl};
use ralph::prompt::{DEFAULT_CONTEXT_TEMPLATE, compose, context_for, render_context};
use ralph::roles::{TriggerContext, Triggers};
use ralph::task::{Patch, Queue, Status, TaskId};

/// The sizes people have (hundreds to thousands of tasks), and 100k as
/// the far edge.
const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn data(tasks: usize) -> String {
    tasks_jsonl(&Spec {
        tasks,
        seed: 42,
        pending_at: PendingAt::Last,
    })
}

/// Fewer samples for the big sizes, so `cargo bench` ends in minutes.
fn group<'c>(
    c: &'c mut Criterion,
    name: &str,
    tasks: usize,
) -> criterion::BenchmarkGroup<'c, criterion::measurement::WallTime> {
    let mut group = c.benchmark_group(name);
    if tasks >= 100_000 {
        group.sample_size(10);
        group.measurement_time(Duration::from_secs(5));
    }
    group
}

fn parse_and_next(c: &mut Criterion) {
    for tasks in SIZES {
        let text = data(tasks);
        let queue = Queue::parse(text.as_bytes(), b"").expect("generated files are valid");
        let mut group = group(c, "queue", tasks);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("parse", tasks), &text, |b, text| {
            b.iter(|| Queue::parse(black_box(text.as_bytes()), b"").expect("valid"));
        });
        group.bench_with_input(BenchmarkId::new("next", tasks), &queue, |b, queue| {
            b.iter(|| black_box(queue).next().map(|task| task.id.clone()));
        });
        group.bench_with_input(BenchmarkId::new("parse+next", tasks), &text, |b, text| {
            b.iter(|| {
                let queue = Queue::parse(black_box(text.as_bytes()), b"").expect("valid");
                queue.next().map(|task| task.id.clone())
            });
        });
        group.finish();
    }
}

fn patch_and_write(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("ralph-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("tasks.jsonl");
    for tasks in SIZES {
        let text = data(tasks);
        let queue = Queue::parse(text.as_bytes(), b"").expect("valid");
        let id = queue.next().expect("a pending task").id.clone();
        let mut group = group(c, "patch", tasks);
        group.bench_with_input(
            BenchmarkId::new("start+render", tasks),
            &queue,
            |b, queue| {
                b.iter_batched(
                    || queue.clone(),
                    |mut queue| {
                        let patch = Patch::SetStatus {
                            id: id.clone(),
                            status: Status::Active,
                        };
                        queue
                            .apply(&patch, "2026-01-01T00:00:00Z")
                            .expect("applies");
                        queue.tasks.render()
                    },
                    BatchSize::LargeInput,
                );
            },
        );
        let archived = TaskId::parse(
            queue
                .tasks
                .tasks()
                .nth((tasks / 2) | 1)
                .expect("a middle task")
                .1
                .id
                .as_str(),
        )
        .expect("valid id");
        group.bench_with_input(
            BenchmarkId::new("archive+render", tasks),
            &queue,
            |b, queue| {
                b.iter_batched(
                    || queue.clone(),
                    |mut queue| {
                        let patch = Patch::Archive {
                            id: archived.clone(),
                            commit: None,
                        };
                        queue
                            .apply(&patch, "2026-01-01T00:00:00Z")
                            .expect("applies");
                        (queue.done.pending_text(), queue.tasks.render())
                    },
                    BatchSize::LargeInput,
                );
            },
        );
        group.bench_with_input(BenchmarkId::new("write_atomic", tasks), &text, |b, text| {
            b.iter(|| ralph::files::write_atomic(&path, text.as_bytes()).expect("writes"));
        });
        group.finish();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn triggers_and_prompt(c: &mut Criterion) {
    let triggers = Triggers::parse(include_str!("../config/roles.yaml"), |_| true)
        .expect("shipped roles parse");
    let text = data(1_000);
    let queue = Queue::parse(text.as_bytes(), b"").expect("valid");
    let task = queue.next().expect("a pending task");
    let vars = TriggerContext::for_task(task);
    c.bench_function("triggers/choose", |b| {
        b.iter(|| triggers.choose(black_box(&vars)).expect("evaluates"));
    });
    let decision = triggers.choose(&vars).expect("evaluates");
    let working = include_str!("../templates/working.md");
    c.bench_function("prompt/render", |b| {
        b.iter(|| {
            let context = context_for(&queue, task, &decision);
            let rendered =
                render_context("context", DEFAULT_CONTEXT_TEMPLATE, &context).expect("renders");
            compose(working, None, &rendered)
        });
    });
}

criterion_group!(
    benches,
    parse_and_next,
    patch_and_write,
    triggers_and_prompt
);
criterion_main!(benches);
