# loaderbench: `make run` and `make test` set everything up on first use.
# LIBTORCH and the Python that runs the PyTorch runtime come from scripts/setup
# (a per-user cache shared by every clone): its first line is the python, its last LIBTORCH.

CARGO ?= cargo
LIBTORCH_DIR = $(shell tail -n 1 .libtorch-path)
PYTHON_PATH = $(shell head -n 1 .libtorch-path)
TORCH = LIBTORCH=$(LIBTORCH_DIR) LOADERBENCH_PYTHON=$(PYTHON_PATH)

.PHONY: setup release run demo test bench soak gpu-check check fmt clippy fuzz .libtorch-path

# libtorch alone, the part the Rust build needs (scripts/setup --libtorch). Always
# re-checked: cheap when the cache is there, installs it when not. Cargo works beside it
# (BESIDE_LIBTORCH): it downloads the crates, or, for a release build, compiles the
# dependencies that need no libtorch (TORCHLESS: the window's libraries, image, TLS, zip)
# at the lowest priority, in the CPU that unpacking torch leaves, until libtorch is there;
# then it stops (cargo keeps every crate it finished; the wait is quiet so the shell does
# not report it terminated). Either one failing leaves the build that follows to say why.
TORCHLESS = eframe egui_plot egui_kittest rfd image zune-jpeg fast_image_resize ureq zip clap sysinfo ron serde_json
FETCH = $(CARGO) fetch --quiet --target "$$(rustc -vV | sed -n 's/^host: //p')"
BESIDE_LIBTORCH = exec $(FETCH)
STOP_BESIDE_LIBTORCH =
release: BESIDE_LIBTORCH = if command -v timeout > /dev/null; then \
		exec nice -n 19 timeout 1h $(CARGO) build --release --quiet $(addprefix -p ,$(TORCHLESS)) 2> /dev/null; \
	else exec $(FETCH); fi
release: STOP_BESIDE_LIBTORCH = kill $$beside 2> /dev/null;
.libtorch-path:
	@($(BESIDE_LIBTORCH)) & beside=$$!; \
		scripts/setup --libtorch > .libtorch-path.tmp && mv .libtorch-path.tmp .libtorch-path; \
		status=$$?; $(STOP_BESIDE_LIBTORCH) wait $$beside 2> /dev/null; exit $$status

# The rest of the environment the PyTorch runtime needs (torchvision, the
# libraries Python's torch links, kornia, webdataset) installs in the background while
# cargo builds, at the lowest priority: on a fresh machine it is about 95 s of CPU (most of
# it unpacking 3.5 GB of wheels), which then goes where the build leaves a core idle, not
# to the build's own critical path. BESIDE starts it, AFTER waits for it and fails where
# it failed.
BESIDE = nice -n 19 scripts/setup > /dev/null & setup=$$!
AFTER = wait $$setup

setup: .libtorch-path
	@scripts/setup > /dev/null
	@echo "libtorch: $(LIBTORCH_DIR)"
	@echo "python:   $(PYTHON_PATH)"

## The release build, with the environment set up beside it.
release: .libtorch-path
	@$(BESIDE); $(TORCH) $(CARGO) build --release; built=$$?; $(AFTER) && exit $$built

## Open the desktop app with the seed-light preset on the built-in dataset (the
## headless demo where there is no display).
run: release
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
		$(TORCH) $(CARGO) run --release -- gui presets/seed-light.ron; \
	else \
		echo "make run: no display (DISPLAY and WAYLAND_DISPLAY are unset): running the headless demo"; \
		$(MAKE) --no-print-directory demo; \
	fi

## Build in release mode and run the seed-light preset headless: its tables, then the
## recommendation with its verdict (measuring further while it is not resolved).
demo: release
	$(TORCH) $(CARGO) run --release -- run presets/seed-light.ron --recommend

## The whole test suite against the real libtorch (built while the environment sets up).
test: .libtorch-path
	@$(BESIDE); $(TORCH) $(CARGO) test --workspace --all-targets --no-run --quiet; $(AFTER)
	$(TORCH) CARGO=$(CARGO) scripts/test

## Benchmarks: our loader against the in-process floor, heavy-pipeline scaling.
bench: setup
	$(TORCH) $(CARGO) bench --workspace

## A long run's footprint: 1,000 epochs per worker kind; memory, descriptors, threads.
soak: setup
	$(TORCH) $(CARGO) bench --bench soak

## The GPU acceptance check (says so and exits 0 where there is no CUDA).
gpu-check: setup
	$(TORCH) scripts/gpu-check

check: .libtorch-path
	$(TORCH) $(CARGO) check --workspace --all-targets
	$(TORCH) $(CARGO) check --no-default-features

clippy: .libtorch-path
	$(TORCH) $(CARGO) clippy --workspace --all-targets -- -D warnings
	$(TORCH) $(CARGO) clippy --no-default-features -- -D warnings

fmt:
	$(CARGO) fmt --all

FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= idx_header npy_header preset journal tar_index image_header
## Fuzz the IDX and .npy headers, the preset parser, the journal reader, the shard index
## and the image headers (needs `cargo install cargo-fuzz`).
## The preset target starts from the built-in presets, the .npy one from arrays numpy saves,
## the journal one from a real run's journal,
## the shard and image ones from tars and images Python writes.
fuzz: release
	mkdir -p fuzz/corpus/preset fuzz/corpus/journal && cp presets/*.ron fuzz/corpus/preset/
	test -e fuzz/corpus/journal/seed-light.jsonl || LD_LIBRARY_PATH=$(LIBTORCH_DIR)/lib \
		target/release/loaderbench run seed-light -q --set samples=256 --set epochs=1 \
		--journal fuzz/corpus/journal/seed-light.jsonl > /dev/null
	$(PYTHON_PATH) scripts/npy-seeds fuzz/corpus/npy_header
	$(PYTHON_PATH) scripts/image-shard-seeds fuzz/corpus
	cd fuzz && for target in $(FUZZ_TARGETS); do \
		LIBTORCH=$(LIBTORCH_DIR) LD_LIBRARY_PATH=$(LIBTORCH_DIR)/lib RUSTC_BOOTSTRAP=1 \
		cargo fuzz run $$target -O --sanitizer none -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done
