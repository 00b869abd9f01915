//! Writing a dataset as an MNIST-style IDX pair (`train-images-idx3-ubyte` and
//! `train-labels-idx1-ubyte`): how the synthetic dataset's exact bytes reach PyTorch,
//! and how benchmarks make MNIST-format data without a download.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use loaderbench_engine::dataset::{Dataset, PixelKind};
use loaderbench_engine::error::{Error, Result};

/// Writes every sample of `dataset` (one channel of u8 pixels, labels 0–255) into `dir`;
/// returns the images and labels files.
pub fn write_idx(dataset: &dyn Dataset, dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let shape = dataset.shape();
    if shape.channels != 1 || shape.pixel != PixelKind::U8 {
        return Err(Error::value(format!(
            "{}: only one-channel u8 images can be written as IDX",
            dataset.describe()
        )));
    }
    let count = u32::try_from(dataset.len())
        .map_err(|_| Error::value("too many samples for an IDX file"))?;
    let dims = [shape.height, shape.width].map(|d| u32::try_from(d).unwrap_or(u32::MAX));
    let images_path = dir.join("train-images-idx3-ubyte");
    let labels_path = dir.join("train-labels-idx1-ubyte");
    let mut images = Writer::create(&images_path)?;
    let mut labels = Writer::create(&labels_path)?;
    images.header(0x0803, &[count, dims[0], dims[1]])?;
    labels.header(0x0801, &[count])?;
    let mut pixels = vec![0; shape.sample_bytes()];
    for index in 0..dataset.len() {
        let label = dataset.read(index, &mut pixels)?;
        let label = u8::try_from(label).map_err(|_| {
            Error::value(format!(
                "{}: label {label} does not fit in an IDX byte",
                dataset.describe()
            ))
        })?;
        images.bytes(&pixels)?;
        labels.bytes(&[label])?;
    }
    images.finish()?;
    labels.finish()?;
    Ok((images_path, labels_path))
}

/// A buffered file whose errors name it.
struct Writer {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Writer {
    fn create(path: &Path) -> Result<Writer> {
        let file = File::create(path).map_err(|err| Error::file(path, err.to_string()))?;
        Ok(Writer {
            path: path.to_path_buf(),
            file: BufWriter::new(file),
        })
    }

    /// The magic number (big-endian, as IDX is) and the dimensions.
    fn header(&mut self, magic: u32, dims: &[u32]) -> Result<()> {
        self.bytes(&magic.to_be_bytes())?;
        for dim in dims {
            self.bytes(&dim.to_be_bytes())?;
        }
        Ok(())
    }

    fn bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|err| Error::file(&self.path, err.to_string()))
    }

    fn finish(mut self) -> Result<()> {
        self.file
            .flush()
            .map_err(|err| Error::file(&self.path, err.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_engine::dataset::{DatasetSpec, open};

    #[test]
    fn written_idx_reads_back_as_the_same_samples() {
        let dir = tempfile::tempdir().unwrap();
        let synthetic = open(&DatasetSpec::default(), Some(50)).unwrap();
        write_idx(synthetic.as_ref(), dir.path()).unwrap();
        let spec = DatasetSpec {
            kind: loaderbench_engine::dataset::DatasetKind::Idx,
            path: Some(dir.path().to_path_buf()),
            ..DatasetSpec::default()
        };
        let idx = open(&spec, None).unwrap();
        assert_eq!(idx.len(), 50);
        let (mut a, mut b) = (vec![0; 784], vec![0; 784]);
        for i in 0..50 {
            assert_eq!(
                synthetic.read(i, &mut a).unwrap(),
                idx.read(i, &mut b).unwrap()
            );
            assert_eq!(a, b);
        }
    }
}
