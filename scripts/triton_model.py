"""SmolLM2 as a Triton Python-backend model (decoupled), for the local engine "Triton (Python
backend)". The installer copies this file to `<engines>/triton-repo/smollm2/1/model.py`; it runs
inside Triton's Python stub, never in the app.

Inputs (Triton's generate extension maps the JSON body's keys onto them):
  text_input  STRING  a raw prompt, or
  messages    STRING  a JSON list of chat messages, rendered with the tokenizer's chat template
  max_tokens INT32, temperature FP32, top_p FP32, seed INT64, ignore_eos BOOL, stream BOOL
Outputs of every response:
  text_output     STRING  the new text of this response (a delta when streaming)
  output_tokens   INT32   tokens generated so far (the last response holds the total)
  prompt_tokens   INT32   tokens of the prompt
  finish_reason   STRING  "" until the last response: "stop" (end of sequence) or "length"

One request at a time per model instance: requests wait in Triton's queue, which its
`nv_inference_queue_duration_us` and pending-request metrics show.
"""

import json

import numpy as np
import torch
import triton_python_backend_utils as pb_utils
from transformers import AutoModelForCausalLM, AutoTokenizer


def _scalar(request, name, default):
    tensor = pb_utils.get_input_tensor_by_name(request, name)
    if tensor is None:
        return default
    value = tensor.as_numpy().reshape(-1)[0]
    return value.decode("utf-8") if isinstance(value, bytes) else value.item()


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        # The engines share a small machine: one thread each, as llama.cpp's servers run.
        torch.set_num_threads(int(params.get("threads", "1")))
        path = params["model_dir"]
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        # float32: CPUs without bf16 units run bfloat16 matmuls far slower than float32.
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        self.model.eval()
        self.eos = {self.tokenizer.eos_token_id, *(self._eos_ids())}
        self._metrics(config["name"])

    def _metrics(self, name):
        # Triton counts requests and their durations itself, not tokens nor what runs now:
        # the model's own metrics, served on Triton's metrics port beside nv_inference_*.
        labels = {"model": name}
        counter, gauge = pb_utils.MetricFamily.COUNTER, pb_utils.MetricFamily.GAUGE
        self.families = [
            pb_utils.MetricFamily(
                name="shootout_llm_prompt_tokens_total", description="Prompt tokens read", kind=counter
            ),
            pb_utils.MetricFamily(
                name="shootout_llm_generation_tokens_total", description="Tokens generated", kind=counter
            ),
            pb_utils.MetricFamily(
                name="shootout_llm_requests_running", description="Requests generating now", kind=gauge
            ),
        ]
        self.prompt_counter, self.generation_counter, self.running = (
            family.Metric(labels=labels) for family in self.families
        )

    def _eos_ids(self):
        ids = getattr(self.model.generation_config, "eos_token_id", None)
        if ids is None:
            return []
        return ids if isinstance(ids, list) else [ids]

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            self.running.set(1)
            try:
                self._generate(request, sender)
            except Exception as error:  # noqa: BLE001 - the client gets the reason, the model serves on
                sender.send(
                    pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error))),
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL,
                )
            finally:
                self.running.set(0)

    def _prompt_ids(self, request):
        messages = _scalar(request, "messages", "")
        if messages:
            chat = json.loads(messages)
            return self.tokenizer.apply_chat_template(
                chat, add_generation_prompt=True, return_dict=False, tokenize=True
            )
        text = _scalar(request, "text_input", "")
        if not text:
            raise ValueError("send text_input or messages")
        return self.tokenizer(text)["input_ids"]

    def _generate(self, request, sender):
        prompt = list(self._prompt_ids(request))
        max_tokens = int(_scalar(request, "max_tokens", 256))
        temperature = float(_scalar(request, "temperature", 1.0))
        top_p = float(_scalar(request, "top_p", 1.0))
        seed = int(_scalar(request, "seed", -1))
        ignore_eos = bool(_scalar(request, "ignore_eos", False))
        stream = bool(_scalar(request, "stream", False))
        generator = torch.Generator()
        if seed >= 0:
            generator.manual_seed(seed)
        else:
            generator.seed()

        def respond(text, count, reason, final):
            outputs = [
                pb_utils.Tensor("text_output", np.array([text.encode("utf-8")], dtype=np.object_)),
                pb_utils.Tensor("output_tokens", np.array([count], dtype=np.int32)),
                pb_utils.Tensor("prompt_tokens", np.array([len(prompt)], dtype=np.int32)),
                pb_utils.Tensor("finish_reason", np.array([reason.encode()], dtype=np.object_)),
            ]
            flags = pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL if final else 0
            sender.send(pb_utils.InferenceResponse(output_tensors=outputs), flags=flags)

        self.prompt_counter.increment(len(prompt))
        generated = []
        sent = ""
        reason = "length"
        with torch.inference_mode():
            inputs = torch.tensor([prompt])
            past = None
            for _ in range(max(0, max_tokens)):
                if sender.is_cancelled():
                    return
                out = self.model(input_ids=inputs, past_key_values=past, use_cache=True)
                past = out.past_key_values
                logits = out.logits[0, -1].float()
                token = self._sample(logits, temperature, top_p, generator)
                if token in self.eos and not ignore_eos:
                    reason = "stop"
                    break
                generated.append(token)
                self.generation_counter.increment(1)
                inputs = torch.tensor([[token]])
                if stream:
                    text = self.tokenizer.decode(generated, skip_special_tokens=True)
                    # Hold back a half-decoded character until its next byte arrives.
                    if not text.endswith("\ufffd") and len(text) > len(sent):
                        respond(text[len(sent) :], len(generated), "", False)
                        sent = text
        text = self.tokenizer.decode(generated, skip_special_tokens=True)
        respond(text[len(sent) :], len(generated), reason, True)

    @staticmethod
    def _sample(logits, temperature, top_p, generator):
        if temperature <= 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / temperature, dim=-1)
        if top_p < 1.0:
            ordered, index = torch.sort(probs, descending=True)
            keep = torch.cumsum(ordered, dim=-1) - ordered < top_p
            probs = torch.zeros_like(probs).scatter(0, index[keep], ordered[keep])
        return int(torch.multinomial(probs / probs.sum(), 1, generator=generator))
