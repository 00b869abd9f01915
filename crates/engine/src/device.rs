//! Devices: where batches end up. [`DeviceSpec`] is what a preset names (`cpu`,
//! `cuda`, `cuda:N`); [`load_cuda`] makes CUDA usable where the CUDA build of libtorch
//! is installed (the linker drops `libtorch_cuda` as unneeded, so it is loaded at
//! start-up, which fails cleanly on the CPU-only install); the transfer helpers pin,
//! copy without blocking and synchronize.

use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tch::{Device, Tensor};

use crate::error::{Error, Result};

/// A device as a preset names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum DeviceSpec {
    Cpu,
    Cuda(usize),
}

/// A device name that is not `cpu`, `cuda` or `cuda:N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a device; use cpu, cuda or cuda:N")]
pub struct UnknownDevice(String);

impl FromStr for DeviceSpec {
    type Err = UnknownDevice;

    fn from_str(text: &str) -> Result<Self, UnknownDevice> {
        let bad = || UnknownDevice(text.to_owned());
        match text.trim() {
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" => Ok(DeviceSpec::Cuda(0)),
            other => match other.strip_prefix("cuda:") {
                Some(index) => index.parse().map(DeviceSpec::Cuda).map_err(|_| bad()),
                None => Err(bad()),
            },
        }
    }
}

impl TryFrom<String> for DeviceSpec {
    type Error = UnknownDevice;

    fn try_from(text: String) -> Result<Self, UnknownDevice> {
        text.parse()
    }
}

impl From<DeviceSpec> for String {
    fn from(spec: DeviceSpec) -> String {
        spec.to_string()
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => write!(f, "cpu"),
            DeviceSpec::Cuda(index) => write!(f, "cuda:{index}"),
        }
    }
}

impl DeviceSpec {
    /// The libtorch device, once checked to be present.
    pub fn resolve(&self) -> Result<Device> {
        match *self {
            DeviceSpec::Cpu => Ok(Device::Cpu),
            DeviceSpec::Cuda(index) => {
                let count = cuda_device_count();
                if index < count {
                    Ok(Device::Cuda(index))
                } else if count == 0 {
                    Err(Error::value(format!(
                        "device {self}: CUDA is not available (no GPU, or the CPU-only libtorch; \
                         run `make setup CUDA=1` on a machine with an NVIDIA driver)"
                    )))
                } else {
                    Err(Error::value(format!(
                        "device {self}: this machine has {count} CUDA device(s)"
                    )))
                }
            }
        }
    }
}

/// The libtorch library directory this build links (from torch-sys, at build time).
pub const LIBTORCH_LIB_DIR: &str = env!("LOADERBENCH_LIBTORCH_LIB");

/// Loads `libtorch_cuda` once, if it is installed; returns whether CUDA can be used.
pub fn load_cuda() -> bool {
    static LOADED: OnceLock<bool> = OnceLock::new();
    *LOADED.get_or_init(|| {
        // `libtorch_cuda.so`, `libtorch_cuda.dylib` or `torch_cuda.dll`.
        let file = libloading::library_filename("torch_cuda");
        let dir = std::path::Path::new(LIBTORCH_LIB_DIR);
        let candidates = [dir.join(&file), std::path::PathBuf::from(&file)];
        let loaded = candidates.iter().any(|name| {
            // SAFETY: libtorch_cuda's initializers only register CUDA kernels with
            // libtorch, which is already loaded; the library is never unloaded.
            match unsafe { libloading::Library::new(name) } {
                Ok(library) => {
                    std::mem::forget(library);
                    true
                }
                Err(_) => false,
            }
        });
        loaded && tch::Cuda::is_available()
    })
}

/// Number of CUDA devices libtorch can use (0 without CUDA).
pub fn cuda_device_count() -> usize {
    if load_cuda() {
        usize::try_from(tch::Cuda::device_count()).unwrap_or(0)
    } else {
        0
    }
}

/// Pins a CPU tensor's memory for faster, asynchronous copies to `device`.
pub fn pin(tensor: &Tensor, device: Device) -> Result<Tensor> {
    Ok(tensor.f_pin_memory(device)?)
}

/// Starts copying `tensor` to `device` without blocking the host.
pub fn to_device(tensor: &Tensor, device: Device) -> Result<Tensor> {
    if tensor.device() == device {
        return Ok(tensor.shallow_clone());
    }
    Ok(tensor.f_to_device_(device, tensor.kind(), true, false)?)
}

/// Waits until every copy and kernel queued on `device` has finished.
pub fn synchronize(device: Device) {
    if let Device::Cuda(index) = device {
        tch::Cuda::synchronize(index as i64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices() {
        assert_eq!("cpu".parse(), Ok(DeviceSpec::Cpu));
        assert_eq!("cuda".parse(), Ok(DeviceSpec::Cuda(0)));
        assert_eq!("cuda:3".parse(), Ok(DeviceSpec::Cuda(3)));
        assert!(
            "cuda:x"
                .parse::<DeviceSpec>()
                .unwrap_err()
                .to_string()
                .contains("cuda:x")
        );
        assert!("gpu".parse::<DeviceSpec>().is_err());
    }

    #[test]
    fn missing_cuda_is_a_clear_error() {
        if cuda_device_count() == 0 {
            let err = DeviceSpec::Cuda(0).resolve().unwrap_err();
            assert!(err.is_bad_input());
            assert!(err.to_string().contains("CUDA is not available"), "{err}");
        }
    }
}
