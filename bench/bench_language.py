"""Language identification on short texts: accuracy and cost of ``content.language.identify``.

A labelled sample written for this bench (no downloads): in 24 languages, Latin and not,
eight short titles of the kind a site's heading, menu or listing page carries ("Apartment
for sale", "Новости недвижимости", "日本の物件") and four listing lines (a property or an
office with its size and price, 20-81 characters); each language's first title and its lines
joined as one listing page's text; and junk a menu or a pager leaves ("Home | About |
Login", "1 2 3 4 5 ... 10", "© 2024"), for which no language (or, for a few, the one its
words are in) is right. The rules of ``content/language.py`` were chosen on this sample
(``--sweep``): it measures them, it is no held-out test. Russian, Ukrainian, Bulgarian and
Serbian have as many texts each, which the web does not. ``--catalogs N`` adds a held-out
one: the translated messages of the machine's gettext catalogs (``/usr/share/locale``, by
the language of their folder), up to N of each kind in each of 38 languages: short ones
(2-4 words, under 31 letters), sentences (40-200 characters) and page-like texts (one
catalog's sentences joined to 320 characters). Its labels are the translators' language, but
its texts carry untranslated program words ("Caps Lock", "--keep-cr").

For each of ``before`` (``identify`` as it was at ``--before`` REF, on py3langid: read from
git, and run only where py3langid is installed, ``pip install py3langid``) and ``after``
(``identify``, on CLD2), per kind of text: right (the label), wrong (another language),
none (no language named); and the CPU time of a call, ``time.process_time()``, the least of
``--repeat`` passes over the texts of the kind, before and after taking turns.
``--articles N`` adds the article pages of the first N sites of the simulated web's
``articles`` world (their main text, as a parse worker reads it), the long texts
``bench/bench_text.py`` times.

    PYTHONPATH=src python bench/bench_language.py --articles 60 --catalogs 60
    PYTHONPATH=src python bench/bench_language.py --errors   # what ``after`` gets wrong
    PYTHONPATH=src python bench/bench_language.py --sweep    # each threshold varied alone
"""

from __future__ import annotations

import argparse
import gettext
import random
import re
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from courtier.content import language

BEFORE_REF = "e8dfea0"  # content/language.py's last version on py3langid

# language: (titles, listing lines)
SAMPLE: dict[str, tuple[list[str], list[str]]] = {
    "en": (
        [
            "Apartment for sale",
            "Houses for rent",
            "Latest news",
            "Contact us",
            "Our services",
            "Property search",
            "New listings today",
            "Shopping cart",
        ],
        [
            "3 bed house for sale in Leeds, £250,000. Garden, garage and close to schools.",
            "Two-bedroom flat to rent near the station, £1,200 per month, available now.",
            "Spacious family home with a large kitchen, two bathrooms and a sunny garden.",
            "Modern office space in the city centre, 120 m², parking included.",
        ],
    ),
    "de": (
        [
            "Wohnung kaufen",
            "Häuser zur Miete",
            "Aktuelle Nachrichten",
            "Kontakt und Anfahrt",
            "Unsere Leistungen",
            "Neue Angebote",
            "Immobilien suchen",
            "Warenkorb",
        ],
        [
            "3-Zimmer-Wohnung in München, 85 m², Balkon, 1.450 € kalt, ab sofort frei.",
            "Einfamilienhaus mit Garten und Garage in ruhiger Lage, Kaufpreis 420.000 €.",
            "Helle Dachgeschosswohnung mit Einbauküche, nahe der U-Bahn.",
            "Büroflächen im Stadtzentrum zu vermieten, 120 m², Stellplätze vorhanden.",
        ],
    ),
    "fr": (
        [
            "Maison à vendre",
            "Appartements à louer",
            "Dernières actualités",
            "Nous contacter",
            "Nos services",
            "Recherche immobilière",
            "Mon panier",
            "Annonces récentes",
        ],
        [
            "Appartement T3 à Lyon, 68 m², balcon, 950 € par mois charges comprises.",
            "Maison de village avec jardin et garage, proche des écoles, 235 000 €.",
            "Studio meublé au centre-ville, idéal pour étudiant, libre immédiatement.",
            "Bureaux à louer dans le quartier de la gare, 120 m², parking inclus.",
        ],
    ),
    "es": (
        [
            "Pisos en venta",
            "Casas en alquiler",
            "Últimas noticias",
            "Contacta con nosotros",
            "Nuestros servicios",
            "Buscar vivienda",
            "Mi carrito",
            "Anuncios nuevos",
        ],
        [
            "Piso de tres habitaciones en Madrid, 85 m², terraza, 1.200 € al mes.",
            "Casa con jardín y piscina cerca de la playa, precio 320.000 €.",
            "Apartamento amueblado en el centro, ideal para estudiantes, disponible ya.",
            "Local comercial en alquiler junto a la estación, 120 m², con aparcamiento.",
        ],
    ),
    "it": (
        [
            "Case in vendita",
            "Appartamenti in affitto",
            "Ultime notizie",
            "Contattaci",
            "I nostri servizi",
            "Cerca immobili",
            "Il mio carrello",
            "Nuovi annunci",
        ],
        [
            "Trilocale a Milano, 80 m², balcone, 1.100 € al mese, spese incluse.",
            "Villetta con giardino e garage in zona tranquilla, prezzo 290.000 €.",
            "Monolocale arredato in centro, ideale per studenti, libero subito.",
            "Ufficio in affitto vicino alla stazione, 120 m², con posto auto.",
        ],
    ),
    "pt": (
        [
            "Casas à venda",
            "Apartamentos para alugar",
            "Últimas notícias",
            "Fale conosco",
            "Nossos serviços",
            "Buscar imóveis",
            "Meu carrinho",
            "Novos anúncios",
        ],
        [
            "Apartamento de dois quartos em Lisboa, 75 m², varanda, 1.100 € por mês.",
            "Moradia com jardim e garagem perto da praia, preço 310.000 €.",
            "Estúdio mobilado no centro da cidade, ideal para estudantes.",
            "Escritório para arrendar junto à estação, 120 m², com estacionamento.",
        ],
    ),
    "nl": (
        [
            "Huizen te koop",
            "Appartementen te huur",
            "Laatste nieuws",
            "Neem contact op",
            "Onze diensten",
            "Woning zoeken",
            "Mijn winkelwagen",
            "Nieuwe aanbiedingen",
        ],
        [
            "Driekamerappartement in Utrecht, 85 m², balkon, € 1.450 per maand.",
            "Vrijstaande woning met tuin en garage in een rustige buurt, vraagprijs € 420.000.",
            "Gemeubileerde studio in het centrum, ideaal voor studenten.",
            "Kantoorruimte te huur bij het station, 120 m², inclusief parkeerplaats.",
        ],
    ),
    "pl": (
        [
            "Mieszkania na sprzedaż",
            "Domy do wynajęcia",
            "Najnowsze wiadomości",
            "Skontaktuj się z nami",
            "Nasze usługi",
            "Szukaj nieruchomości",
            "Mój koszyk",
            "Nowe ogłoszenia",
        ],
        [
            "Mieszkanie trzypokojowe w Krakowie, 62 m², balkon, 650 000 zł.",
            "Dom z ogrodem i garażem w spokojnej okolicy, cena 890 000 zł.",
            "Umeblowana kawalerka w centrum miasta, idealna dla studenta.",
            "Biuro do wynajęcia przy dworcu, 120 m², z miejscem parkingowym.",
        ],
    ),
    "tr": (
        [
            "Satılık daireler",
            "Kiralık evler",
            "Son haberler",
            "Bize ulaşın",
            "Hizmetlerimiz",
            "Emlak ara",
            "Sepetim",
            "Yeni ilanlar",
        ],
        [
            "İstanbul Kadıköy'de satılık 3+1 daire, 120 m², balkonlu, 4.500.000 TL.",
            "Bahçeli ve garajlı müstakil ev, okullara yakın, sakin bir mahallede.",
            "Şehir merkezinde eşyalı stüdyo daire, öğrenciler için ideal.",
            "İstasyonun yanında kiralık ofis, 120 m², otopark dahil.",
        ],
    ),
    "sv": (
        [
            "Bostäder till salu",
            "Lägenheter att hyra",
            "Senaste nytt",
            "Kontakta oss",
            "Våra tjänster",
            "Sök bostad",
            "Min varukorg",
            "Nya annonser",
        ],
        [
            "Trea i Göteborg, 75 kvm, balkong, hyra 9 500 kr per månad.",
            "Villa med trädgård och garage i lugnt område, pris 4 200 000 kr.",
            "Möblerad etta i centrum, perfekt för studenter, ledig direkt.",
            "Kontorslokal att hyra nära stationen, 120 kvm, parkering ingår.",
        ],
    ),
    "vi": (
        [
            "Nhà đất bán",
            "Căn hộ cho thuê",
            "Tin tức mới nhất",
            "Liên hệ với chúng tôi",
            "Dịch vụ của chúng tôi",
            "Tìm kiếm bất động sản",
            "Giỏ hàng",
            "Tin đăng mới",
        ],
        [
            "Bán căn hộ 2 phòng ngủ tại Quận 7, 75 m², giá 3,2 tỷ đồng.",
            "Nhà phố có sân vườn và gara, gần trường học, khu yên tĩnh.",
            "Cho thuê phòng trọ đầy đủ nội thất ở trung tâm thành phố.",
            "Văn phòng cho thuê gần nhà ga, 120 m², có chỗ đậu xe.",
        ],
    ),
    "ru": (
        [
            "Новости недвижимости",
            "Квартиры в Москве",
            "Продажа домов",
            "Свяжитесь с нами",
            "Наши услуги",
            "Поиск жилья",
            "Корзина",
            "Новые объявления",
        ],
        [
            "Продаётся двухкомнатная квартира в Москве, 54 м², 12 500 000 руб.",
            "Дом с участком и гаражом в тихом районе, рядом школа и магазины.",
            "Сдаётся однокомнатная квартира у метро, мебель и техника есть.",
            "Офис в аренду рядом с вокзалом, 120 м², парковка включена.",
        ],
    ),
    "uk": (
        [
            "Новини нерухомості",
            "Квартири у Києві",
            "Продаж будинків",
            "Зв'яжіться з нами",
            "Наші послуги",
            "Пошук житла",
            "Кошик",
            "Нові оголошення",
        ],
        [
            "Продається двокімнатна квартира у Львові, 54 м², 85 000 $.",
            "Будинок з ділянкою та гаражем у тихому районі, поруч школа.",
            "Здається однокімнатна квартира біля метро, є меблі та техніка.",
            "Офіс в оренду поблизу вокзалу, 120 м², паркування включено.",
        ],
    ),
    "bg": (
        [
            "Имоти за продажба",
            "Апартаменти под наем",
            "Последни новини",
            "Свържете се с нас",
            "Нашите услуги",
            "Търсене на имоти",
            "Количка",
            "Нови обяви",
        ],
        [
            "Двустаен апартамент в София, 65 кв.м, тераса, 145 000 евро.",
            "Къща с двор и гараж в тих квартал, близо до училище.",
            "Обзаведено студио в центъра на града, подходящо за студенти.",
            "Офис под наем до гарата, 120 кв.м, с паркомясто.",
        ],
    ),
    "sr": (
        [
            "Продаја станова",
            "Станови у Београду",
            "Најновије вести",
            "Контактирајте нас",
            "Наше услуге",
            "Претрага некретнина",
            "Корпа",
            "Нови огласи",
        ],
        [
            "Двособан стан на Новом Београду, 54 м², тераса, 120.000 евра.",
            "Кућа са двориштем и гаражом у мирном крају, близу школе.",
            "Намештен једнособан стан у центру града, погодан за студенте.",
            "Пословни простор за издавање код станице, 120 м², са паркингом.",
        ],
    ),
    "ar": (
        [
            "شقق للبيع",
            "منازل للإيجار",
            "آخر الأخبار",
            "اتصل بنا",
            "خدماتنا",
            "البحث عن عقار",
            "سلة التسوق",
            "إعلانات جديدة",
        ],
        [
            "شقة للبيع في القاهرة، ثلاث غرف نوم، 120 متر مربع، قريبة من المترو.",
            "فيلا مع حديقة ومسبح في حي هادئ، السعر 2,500,000 درهم.",
            "استوديو مفروش في وسط المدينة، مناسب للطلاب، متاح الآن.",
            "مكتب للإيجار بالقرب من المحطة، 120 متر مربع، مع موقف سيارات.",
        ],
    ),
    "fa": (
        [
            "خرید آپارتمان",
            "خانه برای اجاره",
            "آخرین اخبار",
            "تماس با ما",
            "خدمات ما",
            "جستجوی ملک",
            "سبد خرید",
            "آگهی‌های جدید",
        ],
        [
            "فروش آپارتمان دو خوابه در تهران، ۸۵ متر، نزدیک مترو.",
            "خانه ویلایی با حیاط و پارکینگ در محله‌ای آرام.",
            "اجاره سوئیت مبله در مرکز شهر، مناسب برای دانشجویان.",
            "دفتر کار برای اجاره نزدیک ایستگاه، ۱۲۰ متر، با پارکینگ.",
        ],
    ),
    "he": (
        [
            "דירות למכירה",
            "בתים להשכרה",
            "חדשות אחרונות",
            "צור קשר",
            "השירותים שלנו",
            "חיפוש נכסים",
            "סל קניות",
            "מודעות חדשות",
        ],
        [
            "דירת שלושה חדרים בתל אביב, 75 מ״ר, מרפסת, 2,900,000 ₪.",
            "בית פרטי עם גינה וחניה בשכונה שקטה, קרוב לבתי ספר.",
            "סטודיו מרוהט במרכז העיר, מתאים לסטודנטים, פנוי מיד.",
            "משרד להשכרה ליד התחנה, 120 מ״ר, כולל חניה.",
        ],
    ),
    "el": (
        [
            "Σπίτια προς πώληση",
            "Διαμερίσματα προς ενοικίαση",
            "Τελευταία νέα",
            "Επικοινωνία",
            "Οι υπηρεσίες μας",
            "Αναζήτηση ακινήτων",
            "Το καλάθι μου",
            "Νέες αγγελίες",
        ],
        [
            "Διαμέρισμα 3 δωματίων στην Αθήνα, 85 τ.μ., μπαλκόνι, 210.000 €.",
            "Μονοκατοικία με κήπο και γκαράζ σε ήσυχη περιοχή.",
            "Επιπλωμένη γκαρσονιέρα στο κέντρο, ιδανική για φοιτητές.",
            "Γραφείο προς ενοικίαση κοντά στον σταθμό, 120 τ.μ., με πάρκινγκ.",
        ],
    ),
    "ja": (
        [
            "日本の物件",
            "新築マンション",
            "お問い合わせ",
            "賃貸物件を探す",
            "最新ニュース",
            "東京都港区",
            "カート",
            "会社概要",
        ],
        [
            "東京都港区の新築マンション、駅から徒歩5分、3LDK、8500万円。",
            "閑静な住宅街の一戸建て、庭と駐車場付き、学校まで近い。",
            "家具付きワンルーム、都心の便利な立地、学生におすすめです。",
            "駅前の貸事務所、120平米、駐車場あり。",
        ],
    ),
    "ko": (
        [
            "아파트 매매",
            "원룸 월세",
            "최신 뉴스",
            "문의하기",
            "서비스 안내",
            "부동산 검색",
            "장바구니",
            "새 매물",
        ],
        [
            "서울 강남구 아파트 매매, 84㎡, 방 3개, 12억 원.",
            "정원과 차고가 있는 단독주택, 조용한 동네, 학교 근처.",
            "시내 중심가 풀옵션 원룸, 학생에게 적합, 즉시 입주 가능.",
            "역 근처 사무실 임대, 120㎡, 주차 포함.",
        ],
    ),
    "zh": (
        [
            "二手房出售",
            "北京租房",
            "最新新闻",
            "联系我们",
            "我们的服务",
            "房产搜索",
            "台北市房屋出售",
            "聯絡我們",
        ],
        [
            "北京朝阳区两室一厅出售，85平方米，总价520万元，近地铁。",
            "带花园和车库的独栋别墅，环境安静，靠近学校。",
            "市中心精装单身公寓出租，适合学生，随时入住。",
            "火車站附近辦公室出租，120平方米，含停車位。",
        ],
    ),
    "th": (
        [
            "บ้านขาย",
            "คอนโดให้เช่า",
            "ข่าวล่าสุด",
            "ติดต่อเรา",
            "บริการของเรา",
            "ค้นหาอสังหาริมทรัพย์",
            "ตะกร้าสินค้า",
            "ประกาศใหม่",
        ],
        [
            "ขายคอนโด 2 ห้องนอน ใกล้รถไฟฟ้า ขนาด 65 ตร.ม. ราคา 4.5 ล้านบาท",
            "บ้านเดี่ยวพร้อมสวนและโรงรถ ในหมู่บ้านที่เงียบสงบ ใกล้โรงเรียน",
            "ห้องพักตกแต่งครบ ใจกลางเมือง เหมาะสำหรับนักศึกษา",
            "สำนักงานให้เช่าใกล้สถานี 120 ตร.ม. มีที่จอดรถ",
        ],
    ),
    "hi": (
        [
            "मकान बिक्री के लिए",
            "किराए पर फ्लैट",
            "ताज़ा खबरें",
            "संपर्क करें",
            "हमारी सेवाएं",
            "संपत्ति खोजें",
            "मेरी कार्ट",
            "नए विज्ञापन",
        ],
        [
            "दिल्ली में 2 बीएचके फ्लैट बिक्री के लिए, 85 वर्ग मीटर, 75 लाख रुपये।",
            "बगीचे और गैराज के साथ स्वतंत्र मकान, शांत इलाके में, स्कूल के पास।",
            "शहर के केंद्र में सुसज्जित कमरा किराए पर, छात्रों के लिए उपयुक्त।",
            "स्टेशन के पास कार्यालय किराए पर, 120 वर्ग मीटर, पार्किंग सहित।",
        ],
    ),
}

# Text without a language of its own, or with one its words name: any of these is right.
JUNK: list[tuple[str, set[str | None]]] = [
    ("Home | About | Login", {None, "en"}),
    ("Menu", {None}),
    ("OK 42", {None}),
    ("© 2024", {None}),
    ("1 2 3 4 5 ... 10", {None}),
    ("« Prev | Next »", {None, "en"}),
    ("EUR 1.200,00", {None}),
    ("HTML CSS JS PHP", {None}),
    ("FAQ | RSS | API", {None}),
    ("iPhone 15 Pro 256GB", {None}),
    ("Berlin Paris Madrid Roma London", {None}),
    ("info@example.com", {None}),
    ("", {None}),
    ("★★★★☆ 4.5/5", {None}),
    ("— · — · —", {None}),
]


def labelled() -> dict[str, list[tuple[str, set[str | None]]]]:
    """The sample by kind of text: (text, right answers)."""
    kinds: dict[str, list[tuple[str, set[str | None]]]] = {
        "title": [],
        "line": [],
        "page": [],
        "junk": JUNK,
    }
    for code, (titles, lines) in SAMPLE.items():
        kinds["title"] += [(t, {code}) for t in titles]
        kinds["line"] += [(t, {code}) for t in lines]
        kinds["page"].append(("\n\n".join([titles[0], *lines]), {code}))
    return kinds


def articles(sites: int) -> list[tuple[str, set[str | None]]]:
    """The main text of the simulated web's article pages (``--world articles`` of
    ``bench/bench_text.py``: six languages, 1,500 characters of text) with their language."""
    from courtier.content.text import page_text
    from courtier.simweb.network import Network
    from courtier.simweb.pages import PageRenderer
    from courtier.simweb.world import SIZE_PRESETS, build_world

    world = build_world(SIZE_PRESETS["articles"])
    renderer = PageRenderer(world, Network(40, 8080))
    items: list[tuple[str, set[str | None]]] = []
    for host in world.seed_hosts[:sites]:
        for path in ("/", "/list/1", "/list/2", *(f"/item/{n}" for n in range(1, 7))):
            truth = renderer.article_of(host, path)
            if truth is not None:
                page = renderer.render(world.sites[host], path, "")
                items.append((page_text(page.body).text, {truth.language}))
    return items


def identify_at(ref: str) -> Callable[[str], tuple[str | None, float]] | None:
    """``identify`` as ``content/language.py`` and its ``language_model`` were at the git
    ``ref``, or None (no such ref, or its model not installed)."""
    root = Path(__file__).resolve().parent.parent
    sources = []
    for name in ("language_model", "language"):
        shown = subprocess.run(
            ["git", "-C", str(root), "show", f"{ref}:src/courtier/content/{name}.py"],
            capture_output=True,
            text=True,
        )
        if shown.returncode:
            return None
        sources.append(shown.stdout)
    kept = sys.modules["courtier.content.language_model"]
    model, module = types.ModuleType("language_model_before"), types.ModuleType("before")
    try:
        exec(compile(sources[0], f"{ref}:language_model.py", "exec"), model.__dict__)
        sys.modules["courtier.content.language_model"] = model  # what the old module imports
        exec(compile(sources[1], f"{ref}:language.py", "exec"), module.__dict__)
    except ImportError as exc:
        print(f"no before column: {exc} (pip install py3langid)")
        return None
    finally:
        sys.modules["courtier.content.language_model"] = kept
    module.load_model()
    identify: Callable[[str], tuple[str | None, float]] = module.identify
    return identify


_MORE_LATIN = ("cs", "da", "fi", "hu", "ro", "sk", "hr", "lt", "lv", "et", "sl", "ca", "id", "ms")
_LANGUAGES = (*SAMPLE, *_MORE_LATIN)  # of the held-out catalogs
_FOLDERS = {"zh": ("zh_CN", "zh_TW"), "pt": ("pt", "pt_BR"), "en": ("en_GB",)}
# printf and Python formats, markup, shell variables, mnemonics: not words of the message
_FORMATS = re.compile(
    r"%[-#0 +]*\d*(?:\.\d+)?[hlLqjzt]*[a-zA-Z%]|%\(\w+\)[a-z]|\{[^}]*\}|<[^>]+>"
    r"|\$\{?\w+\}?|\\n|_(?=\w)|&(?=\w)"
)


def catalogs(
    each: int, locale: str = "/usr/share/locale"
) -> dict[str, list[tuple[str, set[str | None]]]]:
    """The held-out sample: translated messages of the gettext catalogs under ``locale``."""
    rng = random.Random(7)
    kinds: dict[str, list[tuple[str, set[str | None]]]] = {"msg": [], "msgline": [], "msgpage": []}
    for code in _LANGUAGES:
        short: set[str] = set()
        lines: set[str] = set()
        pages: list[str] = []
        for folder in _FOLDERS.get(code, (code,)):
            for path in sorted(Path(locale, folder, "LC_MESSAGES").glob("*.mo")):
                try:
                    with path.open("rb") as file:
                        catalog = gettext.GNUTranslations(file)._catalog  # type: ignore[attr-defined]
                except (OSError, ValueError, UnicodeDecodeError):
                    continue
                sentences = []
                for key, value in catalog.items():
                    source = key[1] if isinstance(key, tuple) else key
                    if not key or not isinstance(value, str) or value == source or "\x00" in value:
                        continue
                    text = " ".join(_FORMATS.sub(" ", value).split())
                    if "\n" in value or any(c in text for c in "/=@[]();:"):
                        continue
                    words, letters = len(text.split()), sum(map(str.isalpha, text))
                    if 2 <= words <= 4 and 3 <= letters <= 30:
                        short.add(text)
                    elif 40 <= len(text) <= 200 and words >= 6:
                        lines.add(text)
                    if words >= 6 and 30 <= len(text) <= 300:
                        sentences.append(text)
                if len(sentences) >= 20 and len(pages) < each:
                    rng.shuffle(sentences)
                    page = " ".join(sentences)[: language.LANGUAGE_CHARS]
                    if len(page) >= 200:
                        pages.append(page)
        for kind, texts in (("msg", sorted(short)), ("msgline", sorted(lines)), ("msgpage", pages)):
            rng.shuffle(texts)
            kinds[kind] += [(text, {code}) for text in texts[:each]]
    return kinds


def costs_us(
    fns: dict[str, Callable[[str], object]], texts: list[str], repeat: int
) -> dict[str, float]:
    """Each function's CPU time a call over ``texts``: the least of ``repeat`` passes, the
    functions taking turns in each (the host runs other work: the least pass is the one it
    disturbed least, and the turns share the disturbance)."""
    for fn in fns.values():
        for text in texts:
            fn(text)  # warm: the model loaded, caches filled as in a running worker
    runs: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.process_time()
            for text in texts:
                fn(text)
            runs[name].append((time.process_time() - start) / len(texts) * 1e6)
    return {name: min(values) for name, values in runs.items()}


def tally(
    fn: Callable[[str], tuple[str | None, float]], items: list[tuple[str, set[str | None]]]
) -> tuple[int, int, int, list[str]]:
    """(right, wrong, none, what was wrong) of ``fn`` over ``items``."""
    right = wrong = none = 0
    errors = []
    for text, answers in items:
        code, score = fn(text)
        if code in answers:
            right += 1
        elif code is None:
            none += 1
        else:
            wrong += 1
            errors.append(f"{text!r} -> {code} {score}, want {sorted(map(str, answers))}")
    return right, wrong, none, errors


def sweep(kinds: dict[str, list[tuple[str, set[str | None]]]]) -> None:
    """Right / wrong / none of each kind with each threshold varied alone."""
    grid = {
        "LATIN_MIN_LETTERS": (3, 4, 6, 8, 10),
        "MIN_LETTERS": (10, 15, 20, 30),
        "ONE_LANGUAGE": (0.5, 0.7, 0.8, 0.9, 1.01),
    }
    for name, values in grid.items():
        kept = getattr(language, name)
        for value in values:
            setattr(language, name, value)
            counts = (
                f"{kind} {'/'.join(map(str, tally(language.identify, items)[:3]))}"
                for kind, items in kinds.items()
            )
            print(f"{name}={value:<5g}", "  ".join(counts))
        setattr(language, name, kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--errors", action="store_true")
    parser.add_argument(
        "--articles", type=int, default=0, help="add the article pages of this many sites"
    )
    parser.add_argument(
        "--catalogs", type=int, default=0, help="add this many gettext messages a kind a language"
    )
    parser.add_argument("--before", default=BEFORE_REF, help="the git ref of the before column")
    parser.add_argument("--sweep", action="store_true", help="vary the thresholds one at a time")
    args = parser.parse_args()
    language.load_model()
    kinds = labelled()
    if args.articles:
        kinds["article"] = articles(args.articles)
    held_out = catalogs(args.catalogs) if args.catalogs else {}
    if args.sweep:
        sweep(kinds | held_out)
        return
    everything = [item for items in (kinds | held_out).values() for item in items]
    fns: dict[str, Callable[[str], tuple[str | None, float]]] = {"after": language.identify}
    before = identify_at(args.before)
    if before is not None:
        fns = {"before": before, **fns}
    groups = [*kinds.items(), ("all", [item for items in kinds.values() for item in items])]
    if held_out:
        texts = [item for items in held_out.values() for item in items]
        groups += [*held_out.items(), ("msg all", texts)]
    print(f"{len(everything)} texts")
    print(f"{'':8} {'kind':7} {'n':>4} {'right':>6} {'wrong':>6} {'none':>6} {'us/call':>8}")
    for kind, items in groups:
        costs = costs_us(dict(fns), [text for text, _ in items], args.repeat)
        for name, fn in fns.items():
            right, wrong, none, _ = tally(fn, items)
            n = len(items)
            print(f"{name:8} {kind:7} {n:4} {right:6} {wrong:6} {none:6} {costs[name]:8.1f}")
    if args.errors:
        print("\n".join(f"  wrong: {error}" for error in tally(language.identify, everything)[3]))
        for text, answers in everything:
            if language.identify(text)[0] is None and None not in answers:
                print(f"  none: {text!r} -> {language.identify(text)}")


if __name__ == "__main__":
    main()
