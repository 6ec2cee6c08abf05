"""dlfree.hf: HuggingFace checkpoints, tokenizers and generation (distribution dlfree-hf)."""

from .auto import (
    AutoConfig,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForImageClassification,
    AutoModelForMaskedLM,
    AutoModelForMultipleChoice,
    AutoModelForQuestionAnswering,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)
from .configuration import PretrainedConfig
from .generation import EncoderDecoderCache, GenerationMixin, KVCache, Seq2SeqGenerationMixin
from .image_processing import AutoImageProcessor, ViTImageProcessor
from .modeling import LoadReport, ModelOutput, PreTrainedModel
from .models.albert import (
    AlbertConfig,
    AlbertForMaskedLM,
    AlbertForMultipleChoice,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertModel,
)
from .models.bert import (
    BertConfig,
    BertForMaskedLM,
    BertForMultipleChoice,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from .models.deberta_v2 import (
    DebertaV2Config,
    DebertaV2ForMaskedLM,
    DebertaV2ForMultipleChoice,
    DebertaV2ForQuestionAnswering,
    DebertaV2ForSequenceClassification,
    DebertaV2ForTokenClassification,
    DebertaV2Model,
)
from .models.distilbert import (
    DistilBertConfig,
    DistilBertForMaskedLM,
    DistilBertForMultipleChoice,
    DistilBertForQuestionAnswering,
    DistilBertForSequenceClassification,
    DistilBertForTokenClassification,
    DistilBertModel,
)
from .models.gpt2 import (
    GPT2Config,
    GPT2ForSequenceClassification,
    GPT2LMHeadModel,
    GPT2Model,
)
from .models.llama import (
    LlamaConfig,
    LlamaForCausalLM,
    LlamaForSequenceClassification,
    LlamaModel,
)
from .models.mistral import (
    MistralConfig,
    MistralForCausalLM,
    MistralForSequenceClassification,
    MistralModel,
)
from .models.qwen2 import (
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen2ForSequenceClassification,
    Qwen2Model,
)
from .models.roberta import (
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaForMultipleChoice,
    RobertaForQuestionAnswering,
    RobertaForSequenceClassification,
    RobertaForTokenClassification,
    RobertaModel,
)
from .models.t5 import T5Config, T5EncoderModel, T5ForConditionalGeneration, T5Model
from .models.vit import ViTConfig, ViTForImageClassification, ViTModel
from .models.xlm_roberta import (
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
    XLMRobertaForMultipleChoice,
    XLMRobertaForQuestionAnswering,
    XLMRobertaForSequenceClassification,
    XLMRobertaForTokenClassification,
    XLMRobertaModel,
)
from .tokenizer import AutoTokenizer, BatchEncoding, PreTrainedTokenizer
from .version import __version__
