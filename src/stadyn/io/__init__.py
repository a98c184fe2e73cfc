"""Readers: deserializers, image transforms, minibatch sources, file formats and data tools.

``stadyn.io`` knows nothing of graphs: it yields NumPy arrays. The CNTK programming model::

    from stadyn.io import (ImageDeserializer, MinibatchSource, StreamDef, StreamDefs,
                           transforms as xforms)
    source = MinibatchSource(ImageDeserializer('train_map.txt', StreamDefs(
        features=StreamDef(field='image', transforms=[
            xforms.crop(crop_type='randomside', side_ratio=0.8, jitter_type='uniratio'),
            xforms.scale(width=32, height=32, channels=3, interpolations='linear'),
            xforms.mean('CIFAR-10_mean.xml')]),
        labels=StreamDef(field='label', shape=10))), num_workers=2)
    mb = source.next_minibatch(64)          # {StreamInformation: MinibatchData}
    images = mb[source.streams.features].data  # (64, 3, 32, 32) float32, BGR

See docs/readers.md and docs/recordio.md.
"""

from . import transforms
from ._base64_image import Base64ImageDeserializer
from ._cbf import CBFDeserializer, write_cbf
from ._chunked import ChunkedDeserializer
from ._ctf import CTFDeserializer
from ._deserializer import Deserializer, StreamBatch, StreamSpec
from ._htk_deserializer import HTKFeatureDeserializer
from ._htk_file import (HTKHeader, ScriptEntry, read_htk_features, read_htk_header,
                        read_script_file, write_htk_features)
from ._image import decode_image, encode_image
from ._image_deserializer import ImageDeserializer
from ._limits import DEFAULT_LIMITS, get_limits, set_limits
from ._lm_text import LMSequenceDeserializer, WordClasses, read_word_classes
from ._map_file import MapEntry, read_map_file, scan_image_folder, write_map_file
from ._mean_file import read_mean_file, write_mean_file
from ._mlf import HTKMLFDeserializer, read_mlf, read_state_list
from ._numpy_deserializer import NumpyDeserializer
from ._random import SampleRandom
from ._rec_deserializer import RecordIODeserializer
from ._recordio import MAGIC, RecordIOReader, RecordIOWriter
from ._recordio_images import (IRHeader, ListEntry, pack_image, pack_image_record, read_list_file,
                               unpack_image, unpack_image_record, write_list_file)
from ._recordio_index import IndexedRecordIO, read_idx_file, write_idx_file
from ._source import (DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS, FULL_DATA_SWEEP, INFINITE_SAMPLES,
                      INFINITELY_REPEAT, MinibatchData, MinibatchSource)
from ._source_from_data import MinibatchSourceFromData
from ._sample_positions import start_epoch_at, state_at_samples
from ._sequence_keys import sequence_keys
from ._streams import Record, StreamDef, StreamDefs, StreamInformation
from ._utterance_source import AUTO_RANDOMIZATION_RANGE, UtteranceSource, utterance_order
from ._truncated_source import TruncatedLayout, TruncatedUtteranceSource
from ._bptt_packer import TruncatedPacker
from ._lm_sentence_source import LMSentenceSource
from ._tools import (compute_mean, convert_cifar10, dump_rec, make_image_list, make_map_file,
                     pack_list)
from ._reader_errors import ReaderError
from ._workers import WorkerError
from ._minibatch_count import count_minibatches

__all__ = [
    # deserializers
    "Deserializer", "ImageDeserializer", "CTFDeserializer", "RecordIODeserializer",
    "NumpyDeserializer", "Base64ImageDeserializer", "CBFDeserializer", "HTKFeatureDeserializer",
    "HTKMLFDeserializer", "LMSequenceDeserializer", "ChunkedDeserializer", "StreamDef",
    "StreamDefs", "StreamInformation",
    "StreamSpec", "StreamBatch", "Record", "SampleRandom",
    # sources
    "MinibatchSource", "MinibatchData", "MinibatchSourceFromData", "FULL_DATA_SWEEP",
    "INFINITELY_REPEAT", "INFINITE_SAMPLES", "DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS",
    "WorkerError", "ReaderError", "UtteranceSource", "TruncatedUtteranceSource", "TruncatedLayout",
    "TruncatedPacker",
    "LMSentenceSource",
    "utterance_order", "AUTO_RANDOMIZATION_RANGE", "state_at_samples",
    "start_epoch_at", "sequence_keys", "count_minibatches",
    # transforms
    "transforms",
    # file formats
    "MapEntry", "read_map_file", "write_map_file", "scan_image_folder", "read_mean_file",
    "write_mean_file", "decode_image", "encode_image", "MAGIC", "RecordIOReader",
    "RecordIOWriter", "IndexedRecordIO", "IRHeader", "pack_image_record", "unpack_image_record",
    "pack_image", "unpack_image", "read_idx_file", "write_idx_file", "ListEntry",
    "read_list_file", "write_list_file", "write_cbf", "HTKHeader", "ScriptEntry",
    "read_htk_header", "read_htk_features", "write_htk_features", "read_script_file",
    "read_mlf", "read_state_list", "read_word_classes", "WordClasses",
    # bounds on what an input file may make the readers allocate
    "get_limits", "set_limits", "DEFAULT_LIMITS",
    # tools (``stadyn data ...``)
    "make_map_file", "compute_mean", "convert_cifar10", "make_image_list", "pack_list",
    "dump_rec",
]

# NNabla-style data sources and iterators, their loaders and images, and the digits data set.
from ._csv_data_source import CsvDataSource  # noqa: E402
from ._data_cache import (CacheDataSource, DataSourceWithFileCache,  # noqa: E402
                          DataSourceWithFileCacheError, FileCacheSettings,
                          file_cache_settings)
from ._data_iterator import (DataIterator, data_iterator, data_iterator_cache,  # noqa: E402
                             data_iterator_concat_datasets, data_iterator_csv_dataset,
                             data_iterator_simple)
from ._data_loader import (DownloadError, FileReader, download, get_data_home,  # noqa: E402
                           get_file_extension, load, load_csv, load_image,
                           load_npy)
from ._data_source import (ConcatDataSource, DataSource,  # noqa: E402
                           DataSourceWithMemoryCache, SimpleDataSource, SlicedDataSource)
from ._digits import (DigitsData, data_iterator_digits, load_digits_source,  # noqa: E402
                      split_indices)
from ._image_utils import imread, imresize, imsave  # noqa: E402

__all__ += ["DataIterator", "DataSource", "SimpleDataSource", "DataSourceWithMemoryCache",
            "DataSourceWithFileCache", "DataSourceWithFileCacheError", "SlicedDataSource",
            "ConcatDataSource", "CsvDataSource", "CacheDataSource", "data_iterator",
            "data_iterator_simple", "data_iterator_csv_dataset", "data_iterator_cache",
            "data_iterator_concat_datasets", "FileReader", "DownloadError", "download",
            "get_data_home", "get_file_extension", "load", "load_image", "load_csv", "load_npy",
            "imread", "imsave", "imresize", "DigitsData", "load_digits_source",
            "data_iterator_digits", "split_indices", "FileCacheSettings", "file_cache_settings"]
