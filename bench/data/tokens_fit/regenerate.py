"""Regenerate fit.jsonl: texts the token estimator's weights are fitted on (never tested on).

The estimator in ``context/tokens.py`` is fitted on two sets: the independent 888-text set in the
bench data dir (counts from the Messages API) and this one, made here to cover what that set
lacks: invented words, ids and hashes, capitalisation, symbols and ~30 languages and scripts. The
project's check set (``tests/data/tokens``) is made by a different generator from different word
lists, so the tests measure the estimator on texts it was not fitted on.

Everything here is generated (word lists written for chanctx, random strings, random code
points); counts come from ctok 1.3.0 (MIT, an offline reconstruction of Claude's tokenizer, exact
against the 888 Messages API counts), minus its one-message frame, like the check set:

    PYENV_VERSION=3.12.1 python3.12 -m venv /tmp/ctok && /tmp/ctok/bin/pip install ctok==1.3.0
    /tmp/ctok/bin/python bench/data/tokens_fit/regenerate.py
"""

from __future__ import annotations

import gettext
import json
import random
import re
import string
from collections.abc import Callable, Iterator
from pathlib import Path

OUT = Path(__file__).with_name("fit.jsonl")
FAMILIES = {"claude_v3": "3.0", "claude_v4_8": "4.8"}
FRAME = {"claude_v3": 7, "claude_v4_8": 6}
SEED = 77_2026_11_25

NAMES = ["Priya", "Mateo", "Olga", "Kwame", "Yuki", "Sven", "Leila", "Tomasz", "Amara", "Diego",
         "Mei", "Rafael", "Noor", "Ivan", "Chloe", "Arjun"]  # fmt: skip
THINGS = ["the queue consumer", "our staging cluster", "the nightly export", "search indexer",
          "the feature flag service", "that cron job", "the mobile release", "api-gw-eu",
          "ledger-sync", "the CDN config", "the webhook relay", "db-replica-3", "k8s autoscaler",
          "the invoice renderer", "auth tokens", "the load balancer"]  # fmt: skip
ENGLISH = ["we", "should", "probably", "wait", "until", "tomorrow", "before", "merging", "this", "because", "the", "review", "is", "not", "finished", "and", "nobody", "has", "tested", "the", "migration", "path", "on", "a", "copy", "of", "production", "data", "which", "means", "anything", "could", "happen", "when", "customers", "upgrade", "their", "plans", "overnight", "while", "support", "is", "asleep", "so", "please", "hold", "off", "and", "write", "down", "what", "you", "changed", "in", "the", "ticket", "together", "with", "the", "numbers", "from", "the", "benchmark", "and", "a", "short", "explanation", "of", "the", "risk", "management", "approval", "budget", "quarterly", "roadmap", "dependency", "integration", "throughput", "latency", "availability", "regression", "observability", "infrastructure", "authentication", "authorization", "serialization", "configuration", "documentation"]  # fmt: skip
CHAT = [
    "{n}, did {t} pick up the change from this morning?",
    "heads up: {t} is flapping again, I'm looking",
    "{n} is it ok if I restart {t}? nothing urgent in the queue",
    "can we get a second pair of eyes on {t} — error budget is at {p}%",
    "shipped v{a}.{b}.{c} of {t}, release notes in the channel topic",
    "not sure, maybe ask {n}? they wrote most of {t}",
    "Q: why does {t} need {a} GB of RAM?? A: nobody knows",
    "> {w}\nagree with this, let's do it after the freeze",
    "*{t}* :{e}: p50 {a}ms / p95 {b}ms / p99 {c}ms",
    "<@U{id}|{n}> <#C{id}|incidents> {w}",
    "{W}!!! {w}...",
    "<@{u}> {w}?",
    "cc <@{u}> <@{u2}> re {t}: {w}",
    "{t} {m} went from {a} ms to {c} ms after deploy #{c}, {w}",
    "{n} says {t} has {a} {x} since {h}:{mm} ({p}% of requests)",
    "ok, {t} {x} {a} times in {b} minutes, rolling back to r{a}",
]
PROBLEMS = ["5xx", "OOMs", "restarts", "slow queries", "timeouts", "dropped messages"]
METRICS = ["p50", "p95", "p99", "p999", "error rate", "latency", "qps"]


def slack_id(rng: random.Random, prefix: str) -> str:
    """Slack ids: a type letter, then 8-10 capitals and digits."""
    alphabet = string.ascii_uppercase + string.digits
    return prefix + "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 10)))


EMOJI_NAMES = ["fire", "thumbsup", "ok_hand", "rocket", "warning", "sob", "pray", "eyes", "skull"]

# Words written for chanctx in each language (everyday and office words), used as random
# sequences: token counts depend on the words, not on grammar.
LANGUAGES: dict[str, str] = {
    "german": "und oder aber heute morgen gestern Besprechung Rechnung Fehler Anwendung "
    "Benutzer Datenbank Sicherung Zugriff möglich schnell langsam wichtig Größe Übersicht "
    "prüfen ändern löschen hinzufügen Straße Brücke Frühstück Kollegen ungefähr",
    "french": "et ou mais aujourd'hui demain hier réunion facture erreur application "
    "utilisateur base données sauvegarde accès possible rapide lent important taille aperçu "
    "vérifier modifier supprimer ajouter rue pont déjeuner collègues environ être où déjà",
    "spanish": "y o pero hoy mañana ayer reunión factura error aplicación usuario base datos "
    "copia acceso posible rápido lento importante tamaño resumen revisar cambiar borrar "
    "añadir calle puente desayuno compañeros aproximadamente también más",
    "portuguese": "e ou mas hoje amanhã ontem reunião fatura erro aplicação usuário banco "
    "dados cópia acesso possível rápido lento importante tamanho resumo verificar mudar "
    "apagar adicionar rua ponte café colegas aproximadamente não está",
    "italian": "e o ma oggi domani ieri riunione fattura errore applicazione utente banca "
    "dati copia accesso possibile veloce lento importante dimensione riepilogo controllare "
    "cambiare cancellare aggiungere strada ponte colazione colleghi più perché",
    "dutch": "en of maar vandaag morgen gisteren vergadering factuur fout toepassing "
    "gebruiker database back-up toegang mogelijk snel langzaam belangrijk grootte overzicht "
    "controleren wijzigen verwijderen toevoegen straat brug ontbijt collega's ongeveer",
    "swedish": "och eller men idag imorgon igår möte faktura fel program användare databas "
    "säkerhetskopia åtkomst möjligt snabbt långsamt viktigt storlek översikt kontrollera "
    "ändra radera lägga gata bro frukost kollegor ungefär också",
    "polish": "i lub ale dzisiaj jutro wczoraj spotkanie faktura błąd aplikacja użytkownik "
    "baza danych kopia dostęp możliwe szybko wolno ważne rozmiar przegląd sprawdzić zmienić "
    "usunąć dodać ulica most śniadanie koledzy około też",
    "czech": "a nebo ale dnes zítra včera schůzka faktura chyba aplikace uživatel databáze "
    "záloha přístup možné rychle pomalu důležité velikost přehled zkontrolovat změnit "
    "smazat přidat ulice most snídaně kolegové přibližně také",
    "turkish": "ve veya ama bugün yarın dün toplantı fatura hata uygulama kullanıcı "
    "veritabanı yedek erişim mümkün hızlı yavaş önemli boyut özet kontrol değiştirmek "
    "silmek eklemek sokak köprü kahvaltı meslektaşlar yaklaşık şimdi",
    "vietnamese": "và hoặc nhưng hôm nay ngày mai hôm qua cuộc họp hóa đơn lỗi ứng dụng "
    "người dùng cơ sở dữ liệu sao lưu truy cập có thể nhanh chậm quan trọng kích thước "
    "kiểm tra thay đổi xóa thêm đường cầu bữa sáng đồng nghiệp khoảng",
    "indonesian": "dan atau tetapi hari ini besok kemarin rapat tagihan kesalahan aplikasi "
    "pengguna basis data cadangan akses mungkin cepat lambat penting ukuran ringkasan "
    "periksa ubah hapus tambah jalan jembatan sarapan rekan kira-kira",
    "russian": "и или но сегодня завтра вчера совещание счёт ошибка приложение "
    "пользователь база данных резервная копия доступ возможно быстро медленно важно размер "
    "обзор проверить изменить удалить добавить улица мост завтрак коллеги примерно",
    "ukrainian": "і або але сьогодні завтра вчора нарада рахунок помилка застосунок "
    "користувач база даних резервна копія доступ можливо швидко повільно важливо розмір "
    "огляд перевірити змінити видалити додати вулиця міст сніданок колеги приблизно",
    "bulgarian": "и или но днес утре вчера среща фактура грешка приложение потребител база "
    "данни резервно копие достъп възможно бързо бавно важно размер преглед провери промени "
    "изтрий добави улица мост закуска колеги приблизително",
    "greek": "και ή αλλά σήμερα αύριο χθες σύσκεψη τιμολόγιο σφάλμα εφαρμογή χρήστης βάση "
    "δεδομένων αντίγραφο πρόσβαση δυνατό γρήγορα αργά σημαντικό μέγεθος επισκόπηση έλεγχος "
    "αλλαγή διαγραφή προσθήκη δρόμος γέφυρα πρωινό συνάδελφοι περίπου",
    "hebrew": "ו או אבל היום מחר אתמול פגישה חשבונית שגיאה יישום משתמש מסד נתונים גיבוי "
    "גישה אפשרי מהר לאט חשוב גודל סקירה לבדוק לשנות למחוק להוסיף רחוב גשר ארוחת בוקר "
    "עמיתים בערך",
    "arabic": "و أو لكن اليوم غدا أمس اجتماع فاتورة خطأ تطبيق مستخدم قاعدة بيانات نسخة "
    "احتياطية وصول ممكن بسرعة ببطء مهم حجم نظرة عامة تحقق تغيير حذف إضافة شارع جسر فطور "
    "زملاء تقريبا",
    "persian": "و یا اما امروز فردا دیروز جلسه فاکتور خطا برنامه کاربر پایگاه داده پشتیبان "
    "دسترسی ممکن سریع آهسته مهم اندازه خلاصه بررسی تغییر حذف افزودن خیابان پل صبحانه "
    "همکاران تقریبا",
    "hindi": "और या लेकिन आज कल बैठक बिल त्रुटि एप्लिकेशन उपयोगकर्ता डेटाबेस बैकअप पहुंच "
    "संभव तेज़ धीमा ज़रूरी आकार सारांश जांचना बदलना हटाना जोड़ना सड़क पुल नाश्ता सहकर्मी लगभग",
    "bengali": "এবং অথবা কিন্তু আজ আগামীকাল গতকাল সভা বিল ত্রুটি অ্যাপ ব্যবহারকারী ডেটাবেস "
    "ব্যাকআপ প্রবেশ সম্ভব দ্রুত ধীরে গুরুত্বপূর্ণ আকার সারাংশ যাচাই পরিবর্তন মুছুন যোগ রাস্তা সেতু",
    "tamil": "மற்றும் அல்லது ஆனால் இன்று நாளை நேற்று கூட்டம் பில் பிழை செயலி பயனர் "
    "தரவுத்தளம் காப்பு அணுகல் சாத்தியம் வேகமாக மெதுவாக முக்கியம் அளவு சுருக்கம் சரிபார்",
    "thai": "และ หรือ แต่ วันนี้ พรุ่งนี้ เมื่อวาน ประชุม ใบแจ้งหนี้ ข้อผิดพลาด แอปพลิเคชัน "
    "ผู้ใช้ ฐานข้อมูล สำรอง เข้าถึง เป็นไปได้ เร็ว ช้า สำคัญ ขนาด สรุป ตรวจสอบ เปลี่ยน ลบ "
    "เพิ่ม ถนน สะพาน อาหารเช้า เพื่อนร่วมงาน ประมาณ",
    "japanese": "そして または しかし 今日 明日 昨日 会議 請求書 エラー アプリ ユーザー "
    "データベース バックアップ アクセス 可能 速い 遅い 重要 サイズ 概要 確認する 変更する "
    "削除する 追加する 通り 橋 朝ごはん 同僚 だいたい です ます",
    "chinese": "和 或者 但是 今天 明天 昨天 会议 发票 错误 应用 用户 数据库 备份 访问 可能 "
    "快 慢 重要 大小 概述 检查 修改 删除 添加 街道 桥 早餐 同事 大约 的 了 是",
    "korean": "그리고 또는 하지만 오늘 내일 어제 회의 청구서 오류 애플리케이션 사용자 "
    "데이터베이스 백업 접근 가능 빠르게 느리게 중요 크기 요약 확인 변경 삭제 추가 거리 "
    "다리 아침 동료 대략 입니다",
    "georgian": "და ან მაგრამ დღეს ხვალ გუშინ შეხვედრა ანგარიში შეცდომა აპლიკაცია "
    "მომხმარებელი მონაცემთა ბაზა სარეზერვო წვდომა შესაძლებელი სწრაფად ნელა მნიშვნელოვანი",
    "armenian": "և կամ բայց այսօր վաղը երեկ հանդիպում հաշիվ սխալ հավելված օգտատեր տվյալների "
    "բազա պահուստ մուտք հնարավոր արագ դանդաղ կարևոր չափ ամփոփում ստուգել փոխել ջնջել",
    "amharic": "እና ወይም ግን ዛሬ ነገ ትናንት ስብሰባ ደረሰኝ ስህተት መተግበሪያ ተጠቃሚ የውሂብ ጎታ "
    "ምትኬ መዳረሻ ይቻላል በፍጥነት በዝግታ አስፈላጊ መጠን ማጠቃለያ",
}
# Script blocks for random "words" (worst cases: no real words to merge into).
SCRIPTS: dict[str, tuple[int, int]] = {
    "latin_ext": (0x0100, 0x017F), "greek": (0x03B1, 0x03C9), "cyrillic": (0x0430, 0x044F),
    "armenian": (0x0561, 0x0586), "hebrew": (0x05D0, 0x05EA), "arabic": (0x0627, 0x064A),
    "devanagari": (0x0915, 0x0939), "bengali": (0x0995, 0x09B9), "tamil": (0x0B95, 0x0BB9),
    "thai": (0x0E01, 0x0E2E), "georgian": (0x10D0, 0x10F0), "hangul": (0xAC00, 0xD7A3),
    "hiragana": (0x3041, 0x3096), "katakana": (0x30A1, 0x30FA), "cjk": (0x4E00, 0x9FFF),
    "ethiopic": (0x1200, 0x1357), "latin1": (0x00C0, 0x00FF),
}  # fmt: skip
SYMBOLS = [(0x2190, 0x21FF), (0x2200, 0x22FF), (0x2500, 0x257F), (0x2600, 0x26FF),
           (0x2700, 0x27BF), (0x1F300, 0x1F5FF), (0x1F600, 0x1F64F), (0x1F680, 0x1F6FF),
           (0x1F900, 0x1F9FF), (0x2000, 0x206F), (0xFF01, 0xFF5E)]  # fmt: skip
CONSONANTS = "bcdfghjklmnprstvwxz"
VOWELS = "aeiouy"


def chat(rng: random.Random) -> str:
    return rng.choice(CHAT).format(
        n=rng.choice(NAMES), t=rng.choice(THINGS), p=rng.randint(1, 99), a=rng.randint(0, 999),
        b=rng.randint(100, 9999), c=rng.randint(1000, 99999), e=rng.choice(EMOJI_NAMES),
        id=f"{rng.randint(0, 10**9):09d}".upper(), w=english(rng, 4, 14),
        W=english(rng, 1, 3).upper(), u=slack_id(rng, "U"), u2=slack_id(rng, "W"),
        m=rng.choice(METRICS), x=rng.choice(PROBLEMS), h=f"{rng.randint(0, 23):02d}",
        mm=f"{rng.randint(0, 59):02d}",
    )  # fmt: skip


def english(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(ENGLISH) for _ in range(rng.randint(low, high)))


def cased(rng: random.Random) -> str:
    words = english(rng, 3, 16).split()
    style = rng.choice(["title", "upper", "camel", "pascal", "snake_upper", "mixed"])
    if style == "title":
        return " ".join(w.title() for w in words)
    if style == "upper":
        return " ".join(words).upper()
    if style == "camel":
        return words[0] + "".join(w.title() for w in words[1:4])
    if style == "pascal":
        return ", ".join("".join(w.title() for w in words[i : i + 3]) for i in range(0, 9, 3))
    if style == "snake_upper":
        return "_".join(words[:4]).upper() + "=" + str(rng.randint(0, 1))
    return " ".join(w.upper() if rng.random() < 0.3 else w for w in words)


def invented_word(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 12)))
    return "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) + rng.choice(["", "n", "r", "sk"])
                   for _ in range(rng.randint(1, 4)))  # fmt: skip


def invented(rng: random.Random) -> str:
    words = [invented_word(rng) for _ in range(rng.randint(3, 15))]
    style = rng.random()
    if style < 0.2:
        words = [w.title() for w in words]
    elif style < 0.3:
        words = [w.upper() for w in words]
    joiner = rng.choice([" ", " ", "-", "_", ".", "/"])
    return joiner.join(words)


def ids(rng: random.Random) -> str:
    kind = rng.randrange(9)
    n = rng.randint(1, 6)
    if kind == 0:
        return " ".join(f"{rng.getrandbits(128):032x}" for _ in range(n))
    if kind == 1:
        return " ".join(f"{rng.getrandbits(rng.randint(8, 64)):x}" for _ in range(n))
    if kind == 2:
        alphabet = string.ascii_letters + string.digits + "+/"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(8, 120)))
    if kind == 3:
        return " ".join(str(rng.randint(0, 10 ** rng.randint(1, 15))) for _ in range(n * 2))
    if kind == 4:
        host = invented_word(rng) + rng.choice([".io", ".com", ".dev", ".example.org"])
        path = "/".join(invented_word(rng) for _ in range(rng.randint(1, 4)))
        return f"https://{host}/{path}?id={rng.getrandbits(40):x}&utm_source={invented_word(rng)}"
    if kind == 5:
        return ", ".join(".".join(str(rng.randint(0, 255)) for _ in range(4)) for _ in range(n))
    if kind == 6:
        return " ".join("U" + "".join(rng.choice(string.ascii_uppercase + string.digits)
                                      for _ in range(10)) for _ in range(n))  # fmt: skip
    if kind == 7:
        return " ".join(f"{rng.randint(1, 9999)}.{rng.randint(0, 999999):06d}" for _ in range(n))
    return "".join(rng.choice(string.printable[:94]) for _ in range(rng.randint(5, 80)))


def code(rng: random.Random) -> str:
    name = "_".join(invented_word(rng) for _ in range(2))
    kind = rng.randrange(5)
    if kind == 0:
        return (f"def {name}(self, {invented_word(rng)}: int = {rng.randint(0, 99)}) -> None:\n"
                f"    if not self.{invented_word(rng)}:\n        raise ValueError(f\"bad {{x!r}}\")\n"
                f"    return [{name}(i) for i in range({rng.randint(2, 50)})]\n")  # fmt: skip
    if kind == 1:
        return (f"{name}:\n  image: registry/{invented_word(rng)}:{rng.randint(1, 9)}.{rng.randint(0, 20)}\n"
                f"  replicas: {rng.randint(1, 9)}\n  env:\n    - name: {name.upper()}\n"
                f"      value: \"{english(rng, 1, 4)}\"\n")  # fmt: skip
    if kind == 2:
        return (f"<div class=\"{invented_word(rng)}\"><a href=\"/{name}\">{english(rng, 1, 5)}"
                f"</a></div>\n<script>window.{name} = {{ok: true, n: {rng.randint(0, 999)}}};</script>")  # fmt: skip
    if kind == 3:
        return (f"$ grep -rn '{invented_word(rng)}' src/ | awk -F: '{{print $1}}' | sort -u\n"
                f"src/{name}.rs:{rng.randint(1, 900)}:    let {invented_word(rng)} = vec![0u8; {rng.randint(1, 4096)}];")  # fmt: skip
    cols = [invented_word(rng) for _ in range(rng.randint(2, 5))]
    rows = [" | ".join(str(rng.randint(0, 999)) for _ in cols) for _ in range(rng.randint(1, 5))]
    return "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n" + "\n".join(
        f"| {r} |" for r in rows)  # fmt: skip


def json_text(rng: random.Random) -> str:
    def value(depth: int) -> object:
        roll = rng.random()
        if depth > 2 or roll < 0.3:
            return rng.choice([rng.randint(-999, 99999), english(rng, 1, 5), True, None,
                               round(rng.uniform(0, 100), rng.randint(0, 4))])  # fmt: skip
        if roll < 0.65:
            return {invented_word(rng): value(depth + 1) for _ in range(rng.randint(1, 4))}
        return [value(depth + 1) for _ in range(rng.randint(1, 4))]

    return json.dumps(value(0), indent=rng.choice([None, 2]), ensure_ascii=rng.random() < 0.3)


def symbols(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(2, 20)):
        low, high = rng.choice(SYMBOLS)
        out.append(chr(rng.randint(low, high)))
        if rng.random() < 0.3:
            out.append(" ")
    if rng.random() < 0.5:
        out.append(" " + english(rng, 2, 8))
    return "".join(out)


def language(words: list[str], rng: random.Random) -> str:
    picked = [rng.choice(words) for _ in range(rng.randint(3, 30))]
    text = " ".join(picked)
    if rng.random() < 0.4:
        text = text[:1].upper() + text[1:] + rng.choice([".", "?", "!", ""])
    if rng.random() < 0.2:
        text += " " + chat(rng)
    return text


def script_words(low: int, high: int, rng: random.Random) -> str:
    return " ".join("".join(chr(rng.randint(low, high)) for _ in range(rng.randint(1, 8)))
                    for _ in range(rng.randint(2, 12)))  # fmt: skip


def layout(rng: random.Random) -> str:
    lines = []
    for _ in range(rng.randint(2, 10)):
        indent = " " * rng.choice([0, 0, 2, 4, 8]) + rng.choice(["", "- ", "* ", "1. ", "> "])
        lines.append(indent + rng.choice([english(rng, 1, 10), chat(rng), cased(rng)]))
    return rng.choice(["\n", "\n\n", "\r\n"]).join(lines) + rng.choice(["", "\n", "\n\n\n"])


def texts() -> Iterator[tuple[str, str]]:
    rng = random.Random(SEED)
    makers: list[tuple[str, int, Callable[[], str]]] = [
        ("chat", 150, lambda: chat(rng)),
        ("chat_multi", 40, lambda: "\n".join(chat(rng) for _ in range(rng.randint(2, 8)))),
        ("cased", 100, lambda: cased(rng)),
        ("invented", 150, lambda: invented(rng)),
        ("ids", 150, lambda: ids(rng)),
        ("code", 100, lambda: code(rng)),
        ("json", 60, lambda: json_text(rng)),
        ("symbols", 80, lambda: symbols(rng)),
        ("layout", 60, lambda: layout(rng)),
        ("numbers", 120, lambda: numbers(rng)),
    ]
    for category, count, make in makers:
        for _ in range(count):
            yield category, make()
    for name, words in LANGUAGES.items():
        split = words.split()
        for _ in range(14):
            yield f"lang_{name}", language(split, rng)
    yield from catalogue_texts(rng)
    for name, (low, high) in SCRIPTS.items():
        for _ in range(8):
            yield f"script_{name}", script_words(low, high, rng)


# Catalogue languages: common words harvested from Debian's gettext catalogues
# (/usr/share/locale/<lang>/LC_MESSAGES/*.mo, from the GTK, GLib and other packages installed)
# when this script runs. Only single words (or 1-4 character pieces for scripts written without
# spaces) are kept and then shuffled into random sequences: no translated message is stored.
CATALOGUE_LANGUAGES = ["de", "fr", "es", "pt", "pt_BR", "it", "nl", "sv", "da", "nb", "fi", "pl", "cs", "sk", "hu", "ro", "tr", "vi", "id", "ru", "uk", "bg", "sr", "el", "he", "ar", "fa", "hi", "bn", "ta", "mr", "th", "ja", "zh_CN", "zh_TW", "ko", "ka", "hy", "lt", "lv", "et", "hr", "sl", "ca", "eu", "gl", "ms", "km"]  # fmt: skip
UNSPACED = {"th", "ja", "zh_CN", "zh_TW", "km"}
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)?")


def catalogue_words(lang: str, limit: int = 5000) -> list[str]:
    counts: dict[str, int] = {}
    for path in sorted(Path("/usr/share/locale", lang, "LC_MESSAGES").glob("*.mo")):
        try:
            with path.open("rb") as f:
                catalog = gettext.GNUTranslations(f)._catalog  # type: ignore[attr-defined]
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        for key, value in catalog.items():
            if not key or not isinstance(value, str):
                continue
            for word in _WORD.findall(value):
                if lang in UNSPACED:
                    if word.isascii():
                        continue
                    for i in range(0, len(word) - 1, 3):  # pieces of 3-4 characters
                        piece = word[i : i + 3 + i % 2]
                        counts[piece] = counts.get(piece, 0) + 1
                elif 1 < len(word) < 25:
                    counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=lambda w: (-counts[w], w))[:limit]


def catalogue_texts(rng: random.Random) -> Iterator[tuple[str, str]]:
    for lang in CATALOGUE_LANGUAGES:
        words = catalogue_words(lang)
        if len(words) < 50:
            continue
        joiner = "" if lang in UNSPACED else " "
        common, rare = words[:300], words[300:] or words
        for _ in range(16):
            # Like running text: about half the words common ones, half from the long tail.
            picked = [rng.choice(common if rng.random() < 0.5 else rare)
                      for _ in range(rng.randint(3, 40))]  # fmt: skip
            text = joiner.join(picked)
            if rng.random() < 0.5:
                text += rng.choice([".", "?", "!", ":", "。", ","])
            if rng.random() < 0.3:
                text = chat(rng) + " " + text
            if rng.random() < 0.2:
                text += f" {rng.randint(1, 99999)} {rng.choice(THINGS)}"
            yield f"catalogue_{lang}", text


def numbers(rng: random.Random) -> str:
    parts = [
        f"took {rng.randint(1, 99999)} ms",
        f"at {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
        f"#{rng.randint(1, 999999)}",
        f"v{rng.randint(0, 20)}.{rng.randint(0, 99)}.{rng.randint(0, 999)}",
        f"${rng.randint(1, 99999)}.{rng.randint(0, 99):02d}",
        f"{rng.randint(1, 999)},{rng.randint(0, 999):03d} users",
        f"{rng.randint(1, 100)}%",
        f"{rng.randint(1, 9999)} - {rng.randint(1, 9999)} = {rng.randint(-9999, 9999)}",
        f"from {rng.randint(1, 9999)} to {rng.randint(1, 99999)} {rng.choice(['ms', 's', 'MB', 'rps'])}",
        f"{rng.randint(2020, 2030)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        f"error {rng.randint(100, 599)} on {rng.randint(1, 99)} of {rng.randint(100, 9999)} pods",
    ]
    picked = rng.sample(parts, rng.randint(1, 5))
    filler = [english(rng, 1, 6) for _ in picked]
    return " ".join(f"{a} {b}" for a, b in zip(filler, picked, strict=True))


def main() -> None:
    import ctok  # type: ignore[import-not-found]

    with OUT.open("w", encoding="utf-8") as out:
        for category, text in texts():
            row: dict[str, object] = {"category": category, "text": text}
            for name, version in FAMILIES.items():
                row[name] = ctok.token_count(text, version) - FRAME[name]
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
