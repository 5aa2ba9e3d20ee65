// The texts of the golden files (make_golden.mjs): each names what it covers.
const repeat = (s, n) => Array.from({ length: n }, () => s).join('');

export const goldenTexts = [
  ['empty', ''],
  ['ascii sentence', 'Hello, world! How are you doing today?'],
  ['contractions', "I'm sure you're right, they've said it's theirs. DON'T SHOUT, We'LL see."],
  ['code', 'def f(x):\n    return x ** 2  # square\n\nprint(f(12345678))\n'],
  ['digits', 'Call 1234567890 or +1 (555) 010-9999; pi is 3.14159265358979, 1e-10 and ٣٤٥ and ①②.'],
  ['cjk', '你好，世界！这是一个测试。日本語のテキストとカタカナ、ひらがな。한국어 문장입니다.'],
  ['emoji', 'Emoji: 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ and 🧑🏿‍🚀 in a row😀😀'],
  ['combining marks', 'Cafe\u0301 nai\u0308ve re\u0301sume\u0301 A\u030A \u1E9B\u0323 q\u0307\u0323 \u0915\u094D\u0937'],
  ['precomposed', 'Café naïve résumé Å ḉ Ω Å'],
  ['compatibility', 'ﬁne ﬂow ² ¼ ｆｕｌｌ ＡＢＣ ㍿ ℌ ™ …'],
  ['crlf', 'line one\r\nline two\r\n\r\nline four\rline five\n'],
  ['whitespace runs', 'a  b   c    d\t\te\t \tf \n \n  g   \n\n\n   h\u00a0i\u3000j\u2003k   '],
  ['leading space', '   leading and trailing   '],
  ['newlines only', '\n\n\n\n'],
  ['special token text', 'user said <|im_start|>system\nignore<|im_end|> and <|endoftext|> and <|begin_of_text|><|eot_id|>'],
  ['gemma and deepseek specials', '<start_of_turn>user\nhi<end_of_turn>\n<bos><｜begin▁of▁sentence｜>text<｜User｜>x<｜Assistant｜>'],
  ['partial special', '<|im_start <|im_end| <|endoftext <start_of_turn <|eot_id'],
  ['punctuation', '!!! ??? ... --- *** ((( ))) [[ ]] {{ }} <<>> :: ;; \'\' "" `` ~~ @@ ## $$ %% ^^ && || \\\\'],
  ['urls', 'See https://example.com/path?query=1&b=two#frag and mailto:a.b@c.de.'],
  ['mixed scripts', 'Ελληνικά Русский עברית العربية हिन्दी ไทย ქართული Հայերեն'],
  ['arabic digits and rtl', 'العدد ١٢٣ والرقم 456 \u200f\u200e'],
  ['zero width', 'zero\u200bwidth\u200cjoin\u200dnon\ufeffbom'],
  ['control characters', 'tab\tvt\u000bff\u000cnul-free \u0001\u001f\u007f\u0085 end'],
  ['long word', 'Pneumonoultramicroscopicsilicovolcanoconiosis ' + repeat('abc', 100)],
  ['long repeated text', repeat('The quick brown fox jumps over the lazy dog. ', 60)],
  ['long repeated cjk', repeat('東京は日本の首都です。', 40)],
  ['markdown', '# Title\n\n- item **bold** _it_\n- `code`\n\n```python\nx = [1, 2, 3]\n```\n\n| a | b |\n|---|---|\n'],
  ['json', '{"name": "warmroute", "tokens": [1, 2, 3], "nested": {"ok": true, "n": null}}'],
  ['chat rendered qwen', '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n'],
  ['chat rendered llama', '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>'],
  ['apostrophes unicode', 'It\u2019s John\u2019s. l\'été ’s \'S \'LL \'Ve'],
  ['single characters', 'a'],
  ['single space', ' '],
  ['only emoji', '🤖'],
  ['surrogate-free astral', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 𐐀𐐨 🀄'],
  ['lowercase long s', "It'ſ the 'ſ and 'K ǅ İstanbul"],
];

// Texts the post-processor is checked on (encode with special tokens asked for).
export const specialTexts = [
  ['plain', 'Hello world'],
  ['empty', ''],
  ['with template text', '<|im_start|>user\nhi<|im_end|>'],
];
